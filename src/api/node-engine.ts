// Which engine a node runs, as the sidecar reads it from INFO server and writes it on the pod
// (ENGINE_ANNOTATION) for the hook to show in status.nodes. Shared by both kinds. Pure.
// Invariants: Valkey says `server_name:valkey` and `valkey_version`, and keeps `redis_version`
// (7.2.4 in 8.0.1) for clients that read it, so the engine's own version field wins; Redis says
// no `server_name`. An unknown server_name is reported as the server calls itself, never guessed.
// The annotation belongs to the pod: a pod replaced by a new image starts without it, so status
// never shows a replaced pod's engine as the new one's.
import { GROUP } from './labels.ts';

/** Written by the sidecar on each pod once its node answered: `<engine> <version>`, e.g. `valkey 8.0.1`. */
// Not `engine`: that key is the hook's label on the pod template (what the spec asks the pod to run).
export const ENGINE_ANNOTATION = `${GROUP}/running-engine`;

export interface NodeEngine {
  /** `redis`, `valkey`, or what an unknown server calls itself (server_name, lower case). */
  engine: string;
  /** The engine's own version (valkey_version on Valkey, redis_version on Redis). */
  version: string;
}

/** The engine INFO server's fields name, or null when they carry no version (not a server section). */
export function engineFromInfo(fields: ReadonlyMap<string, string>): NodeEngine | null {
  const name = (fields.get('server_name') ?? '').trim().toLowerCase();
  const engine = name === '' ? 'redis' : name;
  const version = (fields.get(`${engine}_version`) ?? fields.get('redis_version') ?? '').trim();
  if (version === '' || !/^[a-z][a-z0-9-]*$/.test(engine)) return null;
  return { engine, version };
}

export function formatEngine(n: NodeEngine): string {
  return `${n.engine} ${n.version}`;
}

/** The annotation's value read back; null when absent or not of the form `<engine> <version>`. */
export function readEngine(value: string | undefined): NodeEngine | null {
  const m = /^([a-z][a-z0-9-]*) (\S+)$/.exec(value?.trim() ?? '');
  return m ? { engine: m[1]!, version: m[2]! } : null;
}

export function sameEngine(a: NodeEngine | null, b: NodeEngine | null): boolean {
  return a !== null && b !== null && a.engine === b.engine && a.version === b.version;
}

/** One pod as a move reads it: the engine its node answered with, and whether it runs the current template. */
export interface EngineOfPod {
  pod: string;
  /** null: its node has not answered (yet). */
  engine: NodeEngine | null;
  /** Runs its StatefulSet's current template; null: not known. */
  updated: boolean | null;
}

/**
 * The engine the pods are meant to run: spec.engine when the spec says it, else the one engine
 * every answering pod of the current template runs (a spec.image of another engine); null when
 * neither says (no pod of the current template answered yet, or they disagree).
 */
export function targetEngine(specEngine: unknown, pods: readonly EngineOfPod[]): string | null {
  if (typeof specEngine === 'string' && specEngine !== '') return specEngine;
  const current = new Set(pods.filter((p) => p.updated === true && p.engine !== null).map((p) => p.engine!.engine));
  return current.size === 1 ? [...current][0]! : null;
}

export interface EngineMoveProgress {
  /** The engine and versions the pods are moving from (`redis 7.2.6`; several joined by `, `). */
  from: string;
  /** The target engine, with the version its pods answer with once one does (`valkey 8.0.1`). */
  to: string;
  /** Pods whose node answers with the target engine, sorted. */
  arrived: string[];
  total: number;
}

/**
 * A move between engines is under way when some answering pod runs another engine than the
 * target; null when not (every answering pod runs the target, or the target is not known).
 */
export function engineMoveProgress(target: string | null, pods: readonly EngineOfPod[]): EngineMoveProgress | null {
  if (target === null) return null;
  const answered = pods.filter((p) => p.engine !== null);
  const off = answered.filter((p) => p.engine!.engine !== target);
  if (off.length === 0) return null;
  const arrived = answered.filter((p) => p.engine!.engine === target);
  const versions = (list: readonly EngineOfPod[]) => [...new Set(list.map((p) => formatEngine(p.engine!)))].sort();
  const toVersions = versions(arrived);
  return {
    from: versions(off).join(', '),
    to: toVersions.length > 0 ? toVersions.join(', ') : target,
    arrived: arrived.map((p) => p.pod).sort(),
    total: pods.length,
  };
}

/** spec.engine when the spec says it, as an object to spread into a view (read as data: a spec may not carry it). */
export function engineField(spec: object): { engine?: string } {
  const engine = (spec as { engine?: unknown }).engine;
  return typeof engine === 'string' && engine !== '' ? { engine } : {};
}
