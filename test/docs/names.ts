// What the docs name, and what the code and the CRDs have, for test/docs/names.test.ts: the
// routes the server registers, the environment variables the two processes read, the alerts, the
// annotation and label keys, the fields of the three CRDs, the sidecar's RBAC grants. Each side is
// read from its source (the built fastify app, the config modules, src/api, manifests/), never
// from a list kept here, so a new route, variable, alert or key shows up as undocumented.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parse, parseAllDocuments } from 'yaml';
import { ALERT_NAMES } from '../../src/api/monitoring.ts';
import { buildApp } from '../../src/server/app.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** The pages users read (docs/api-reference.md is generated from the schema and checked by its own test). */
export const DOC_PAGES = [
  'README.md',
  'docs/troubleshooting.md',
  'docs/monitoring.md',
  'charts/redis-operator/README.md',
  'manifests/README.md',
] as const;

export function filesUnder(dir: string, pattern = /\.(ts|ya?ml|json|sh)$/): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const p = join(dir, entry);
    return statSync(join(ROOT, p)).isDirectory() ? filesUnder(p, pattern) : pattern.test(entry) ? [p] : [];
  });
}

/** `METHOD /path` of every route the hook server registers, from the real app. */
export async function registeredRoutes(): Promise<string[]> {
  const app = buildApp({ logger: pino({ level: 'silent' }), defaultMetrics: false });
  const routes: string[] = [];
  app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) if (m !== 'HEAD') routes.push(`${m} ${r.url}`);
  });
  await app.ready();
  await app.close();
  return [...new Set(routes)].sort();
}

/** The lines of the first Markdown table whose header row starts with `| <first> |`. */
export function tableRows(text: string, first: string): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^\\s*\\|\\s*${first}\\s*\\|`).test(l));
  if (start < 0) return [];
  const rows: string[] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.trim().startsWith('|'); i++) rows.push(lines[i]!);
  return rows;
}

/** `METHOD /path` spans of README's route table. */
export function documentedRoutes(readme: string): string[] {
  return [
    ...new Set(
      tableRows(readme, 'route').flatMap((r) =>
        [...r.matchAll(/`(GET|POST) (\/[\w/-]*)`/g)].map((m) => `${m[1]} ${m[2]}`),
      ),
    ),
  ].sort();
}

/** Environment variables the hook and the sidecar read (their config modules: every variable goes through `env`). */
export function readEnvironment(): string[] {
  const text = read('src/server/config.ts') + read('src/sidecar/config.ts');
  return [...new Set([...text.matchAll(/\(\s*env,\s*'([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1]!))].sort();
}

/** The first cell's variable of each row of README's configuration table. */
export function documentedEnvironment(readme: string): string[] {
  return [
    ...new Set(
      tableRows(readme, 'variable').flatMap((r) =>
        [...(r.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!),
      ),
    ),
  ].sort();
}

/** Every alert: `Redis` + ALERT_NAMES (per Redis) and the operator's own rules. */
export function allAlerts(): string[] {
  const operator = [...read('manifests/components/monitoring/operator-rules.yaml').matchAll(/alert: (\w+)/g)].map(
    (m) => m[1]!,
  );
  return [...new Set([...ALERT_NAMES.map((a) => `Redis${a}`), ...operator])].sort();
}

/** Annotation and label keys under the API group, with where the code defines them. */
export function operatorKeys(): string[] {
  const text = filesUnder('src')
    .map((f) => read(f))
    .join('\n');
  return [...new Set([...text.matchAll(/(?:\$\{GROUP\}|redis\.example\.com)\/([a-z][a-z0-9-]*)/g)].map((m) => m[1]!))]
    .filter((k) => k !== 'v1')
    .sort();
}

/** Keys under the API group a page names (a jsonpath's escaped dots too), with the line of each. */
export function namedKeys(text: string): Array<{ key: string; line: number }> {
  return text
    .split('\n')
    .flatMap((l, i) =>
      [...l.matchAll(/redis(?:\\*\.)example(?:\\*\.)com\/([a-z][a-z0-9-]*)/g)]
        .filter((m) => m[1] !== 'v1')
        .map((m) => ({ key: m[1]!, line: i + 1 })),
    );
}

interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
}
const CRD_FILES = {
  redis: 'manifests/crd.yaml',
  rediscluster: 'manifests/rediscluster-crd.yaml',
  redisbackup: 'manifests/redisbackup-crd.yaml',
} as const;
export type Kind = keyof typeof CRD_FILES;
const schemas = Object.fromEntries(
  Object.entries(CRD_FILES).map(([k, f]) => [
    k,
    (parse(read(f)) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } }).spec.versions[0]!.schema
      .openAPIV3Schema,
  ]),
) as Record<Kind, Schema>;

/** Whether `.status.a[].b` (jsonpath or dotted) is a field of the kind's CRD. */
export function fieldExists(kind: Kind, path: string): boolean {
  let node: Schema | undefined = schemas[kind];
  for (const seg of path.match(/\.\w+|\[[^\]]*\]/g) ?? []) {
    if (node === undefined) return false;
    if (seg.startsWith('['))
      node = node.items ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
    else if (node.properties !== undefined) node = node.properties[seg.slice(1)];
    else if (typeof node.additionalProperties === 'object') node = node.additionalProperties;
    else return false;
  }
  return node !== undefined;
}

const KIND_WORDS: Record<string, Kind> = {
  redis: 'redis',
  redises: 'redis',
  rd: 'redis',
  rediscluster: 'rediscluster',
  redisclusters: 'rediscluster',
  rdc: 'rediscluster',
  redisbackup: 'redisbackup',
  redisbackups: 'redisbackup',
  rbk: 'redisbackup',
  rdb: 'redisbackup',
};

/**
 * Field paths a page names: jsonpaths and custom columns of a `kubectl get` of one of our kinds
 * (checked against that kind), and inline code that is a path (`spec.backup.storage`, checked
 * against any of the three).
 */
export function namedFields(text: string): Array<{ path: string; line: number; kinds: Kind[] }> {
  const out: Array<{ path: string; line: number; kinds: Kind[] }> = [];
  text.split('\n').forEach((l, i) => {
    const get = /kubectl get ([\w,]+)/.exec(l);
    const kinds = (get?.[1] ?? '').split(',').flatMap((w) => (KIND_WORDS[w] ? [KIND_WORDS[w]] : []));
    if (kinds.length > 0 && /-o (jsonpath|custom-columns)|--sort-by/.test(l)) {
      const expr = /(?:jsonpath=|custom-columns=)(\S+|'[^']*')/.exec(l)?.[1] ?? '';
      for (const m of expr.matchAll(/(?<![\w@\]])\.(?:status|spec)(?:\.\w+|\[[^\]]*\])*/g))
        out.push({ path: m[0], line: i + 1, kinds });
    }
    for (const m of l.matchAll(/`\.?((?:spec|status)(?:\.\w+|\[\]|\[\*\])+)`/g))
      out.push({ path: `.${m[1]}`, line: i + 1, kinds: ['redis', 'rediscluster', 'redisbackup'] });
  });
  return out;
}

/** resource -> sorted verbs the sidecar's roles in manifests/rbac.yaml grant, per role name. */
export function rbacGrants(): Map<string, Map<string, string[]>> {
  const roles = new Map<string, Map<string, string[]>>();
  for (const doc of parseAllDocuments(read('manifests/rbac.yaml'))) {
    const o = doc.toJS() as {
      kind?: string;
      metadata?: { name?: string };
      rules?: Array<{ resources: string[]; verbs: string[] }>;
    } | null;
    if (!o || (o.kind !== 'ClusterRole' && o.kind !== 'Role')) continue;
    const grants = new Map<string, string[]>();
    for (const r of o.rules ?? [])
      for (const res of r.resources) grants.set(res, [...new Set([...(grants.get(res) ?? []), ...r.verbs])].sort());
    roles.set(o.metadata?.name ?? '', grants);
  }
  return roles;
}

/** resource -> sorted verbs of README's RBAC table (`| resource | verbs | why |`). */
export function documentedGrants(readme: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const row of tableRows(readme, 'resource')) {
    const cells = row.split('|').map((c) => c.trim());
    const res = /`([\w/]+)`/.exec(cells[1] ?? '')?.[1];
    if (res)
      out.set(
        res,
        (cells[2] ?? '')
          .split(/,\s*/)
          .map((v) => v.trim())
          .filter(Boolean)
          .sort(),
      );
  }
  return out;
}

/** Metric names the operator registers (hook, sidecar, and the sidecar's RedisCluster series). */
export function operatorMetrics(): string[] {
  const text =
    read('src/server/metrics.ts') + read('src/sidecar/metrics.ts') + read('src/sidecar/rediscluster/metrics.ts');
  // Defined as `new Gauge({ name: '…' })` (the hook's) or through metricDefiner, `gauge('…', …)`.
  const defined = /(?:name: |(?:gauge|counter)\(\s*)'(redis_operator_\w+)'/g;
  return [...new Set([...text.matchAll(defined)].map((m) => m[1]!))].sort();
}
