// The engines a Redis or a RedisCluster can run (spec.engine) and the versions tested with each,
// written once: the CRD's CEL rules, the hook's own checks of the same rules, the version an
// unset spec.version resolves to and the default image all come from the tables here.
// Invariants: a combination is accepted only when it is in TESTED; the engine changes only
// between the two ends of BRIDGE (they replicate to each other in both directions, so a move is
// an ordered rollout); within one engine a major.minor never goes down (older servers cannot load
// a newer one's data files); a move between engines is neither an upgrade nor a downgrade.
import type { SpecProblem } from './validate-fields.ts';

export const ENGINES = ['redis', 'valkey'] as const;
export type Engine = (typeof ENGINES)[number];
export const DEFAULT_ENGINE: Engine = 'redis';

/**
 * The major.minor releases tested here, per engine, any patch. The sidecar needs multi-section
 * INFO and multi-parameter CONFIG GET/SET (Redis 7.0+); releases after these are refused until
 * tested.
 */
export const TESTED: Readonly<Record<Engine, readonly string[]>> = { redis: ['7.0', '7.2'], valkey: ['8.0'] };

/** What an unset spec.version means: the newest tested release of the engine. */
export const DEFAULT_VERSION: Readonly<Record<Engine, string>> = { redis: '7.2', valkey: '8.0' };

/**
 * The releases an engine change goes between: Redis 7.2 and Valkey 8.0 replicate to each other in
 * both directions (a Valkey replica syncs from a Redis master and acknowledges WAIT, and a Redis
 * replica follows a promoted Valkey node), which the move's replicas-first rollout needs.
 */
export const BRIDGE: Readonly<Record<Engine, string>> = { redis: '7.2', valkey: '8.0' };

/** The tested combinations in words, for every message that refuses one. */
export const TESTED_TEXT = ENGINES.flatMap((e) => TESTED[e].map((v) => `${e} ${v}`)).join(', ') + ' (any patch)';

/** The image of an engine's release unless spec.image is set. */
export function defaultImage(engine: Engine, version: string): string {
  return engine === 'valkey' ? `valkey/valkey:${version}` : `redis:${version}`;
}

/** The version an engine runs when spec.version is unset. */
export function resolvedVersion(engine: Engine, version: string | undefined): string {
  return version ?? DEFAULT_VERSION[engine];
}

/** "7.2.4-alpine" -> [7, 2]; undefined when the text has no major.minor. */
export function majorMinor(version: string): [number, number] | undefined {
  const m = /^([0-9]+)\.([0-9]+)(?:[.-]|$)/.exec(version);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

const sameRelease = (version: string, release: string) => {
  const a = majorMinor(version);
  const b = majorMinor(release);
  return a !== undefined && b !== undefined && a[0] === b[0] && a[1] === b[1];
};

export const isTested = (engine: Engine, version: string) => TESTED[engine].some((r) => sameRelease(version, r));
const onBridge = (engine: Engine, version: string) => sameRelease(version, BRIDGE[engine]);

// ---- CEL, on the spec (the rules need both fields; `x` is self or oldSelf) ----

// spec.engine is required with a default, and the API server defaults an object before it
// validates it and when it reads it from etcd: self and oldSelf always have one.
const E = (x: string) => `${x}.engine`;
const V = (x: string) =>
  `(has(${x}.version) ? ${x}.version : ${E(x)} == 'valkey' ? '${DEFAULT_VERSION.valkey}' : '${DEFAULT_VERSION.redis}')`;
/** The release regex: "7.2" matches 7.2, 7.2.4 and 7.2-alpine, never 7.20. */
const releaseRegex = (release: string) => `^${release.replace('.', '[.]')}([.-]|$)`;
const isRelease = (x: string, release: string) => `${V(x)}.matches('${releaseRegex(release)}')`;
const engineIs = (x: string, engine: Engine, releases: readonly string[]) =>
  `(${E(x)} == '${engine}' && (${releases.map((r) => isRelease(x, r)).join(' || ')}))`;
const MAJOR = (x: string) => `int(${V(x)}.split('.')[0])`;
const MINOR = (x: string) => `int(${V(x)}.split('-')[0].split('.')[1])`;

export const SUPPORTED_COMBINATION_RULE = ENGINES.map((e) => engineIs('self', e, TESTED[e])).join(' || ');
export const SUPPORTED_COMBINATION_MESSAGE = `spec.engine and spec.version: only the tested combinations are accepted: ${TESTED_TEXT}; an unset version is the engine's newest (redis ${DEFAULT_VERSION.redis}, valkey ${DEFAULT_VERSION.valkey})`;

export const VERSION_NO_DOWNGRADE_RULE = `${E('self')} != ${E('oldSelf')} || ${MAJOR('self')} > ${MAJOR('oldSelf')} || (${MAJOR('self')} == ${MAJOR('oldSelf')} && ${MINOR('self')} >= ${MINOR('oldSelf')})`;
export const VERSION_NO_DOWNGRADE_MESSAGE =
  'spec.version cannot be downgraded to an older major.minor of the same engine: an older server cannot load the data files of a newer one';

const bridge = (x: string) => ENGINES.map((e) => engineIs(x, e, [BRIDGE[e]])).join(' || ');
export const ENGINE_CHANGE_RULE = `${E('self')} == ${E('oldSelf')} || ((${bridge('oldSelf')}) && (${bridge('self')}))`;
export const ENGINE_CHANGE_MESSAGE = `spec.engine changes only between redis ${BRIDGE.redis} and valkey ${BRIDGE.valkey} (any patch), which replicate to each other in both directions: move to redis ${BRIDGE.redis} first (spec.version), then change the engine`;

/** The engine's CEL rules, the same on a Redis and a RedisCluster spec. */
export const ENGINE_VALIDATIONS = [
  { rule: SUPPORTED_COMBINATION_RULE, message: SUPPORTED_COMBINATION_MESSAGE },
  { rule: VERSION_NO_DOWNGRADE_RULE, message: VERSION_NO_DOWNGRADE_MESSAGE },
  { rule: ENGINE_CHANGE_RULE, message: ENGINE_CHANGE_MESSAGE },
];

// ---- the same rules in the hook ----

/** The combination rule for the hook's validation: a problem naming the field, or none. */
export function combinationProblems(engine: Engine, version: string | undefined): SpecProblem[] {
  const v = resolvedVersion(engine, version);
  if (isTested(engine, v)) return [];
  return [
    {
      field: version === undefined ? 'spec.engine' : 'spec.version',
      message: `${engine} ${v} is not tested here: the tested combinations are ${TESTED_TEXT}`,
    },
  ];
}

/** What a workload runs, as the hook last applied it. */
export interface Running {
  engine: Engine;
  version: string;
}

/**
 * Whether `to` may replace what runs now (`from`), as the transition rules say: within an engine no
 * older major.minor; across engines only between the BRIDGE releases.
 */
export function transitionProblems(from: Running, to: { engine: Engine; version: string }): SpecProblem[] {
  const was = `${from.engine} ${from.version}`;
  if (from.engine !== to.engine) {
    if (onBridge(from.engine, from.version) && onBridge(to.engine, to.version)) return [];
    const hint = onBridge(from.engine, from.version)
      ? `choose ${to.engine} ${BRIDGE[to.engine]}`
      : `move to ${from.engine} ${BRIDGE[from.engine]} first (spec.version), then change the engine`;
    return [
      {
        field: 'spec.engine',
        message: `cannot move from ${was} to ${to.engine} ${to.version}: engines change only between redis ${BRIDGE.redis} and valkey ${BRIDGE.valkey} (any patch), which replicate to each other in both directions; ${hint}`,
      },
    ];
  }
  const old = majorMinor(from.version);
  const now = majorMinor(to.version);
  if (old === undefined || now === undefined) return [];
  if (now[0] > old[0] || (now[0] === old[0] && now[1] >= old[1])) return [];
  return [
    {
      field: 'spec.version',
      message: `cannot go from ${was} down to ${to.version}: an older ${to.engine} cannot load the data files of a newer one`,
    },
  ];
}
