// docs/monitoring.md's table of the sidecar's series and the sidecar's registry agree, both ways:
// every series the sidecar registers (its own and the RedisCluster worker's, Node.js' process
// series aside) is documented with exactly its labels, and every documented sidecar series
// exists with them. The table is read as the docs render it: one series a row, first cell
// `name{label,...}`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { createClusterMetrics } from '../../src/sidecar/rediscluster/metrics.ts';
import { createSidecarMetrics } from '../../src/sidecar/metrics.ts';

const DOC = readFileSync(new URL('../../docs/monitoring.md', import.meta.url), 'utf8');

/** name -> sorted labels, of the rows of the table under "### Series the sidecar exports". */
function documented(): Map<string, string[]> {
  const section = /\n### Series the sidecar exports\n([\s\S]*?)(?=\n##)/.exec(DOC)?.[1];
  assert.ok(section, 'docs/monitoring.md has a "Series the sidecar exports" section');
  const out = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    const m = /^\| `([a-z_:]+)(?:\{([a-z_,]*)\})?` \|/.exec(line);
    if (!m) continue;
    assert.ok(!out.has(m[1]!), `${m[1]} is documented once`);
    out.set(m[1]!, (m[2] ?? '').split(',').filter(Boolean).sort());
  }
  return out;
}

/** name -> sorted labels, of what the sidecar process registers. */
async function registered(): Promise<Map<string, string[]>> {
  const m = createSidecarMetrics();
  createClusterMetrics(m.registry, { failovers: m.failovers });
  const out = new Map<string, string[]>();
  for (const metric of m.registry.getMetricsAsArray()) {
    const { name, labelNames } = metric as unknown as { name: string; labelNames?: string[] };
    out.set(name, [...(labelNames ?? [])].sort());
  }
  return out;
}

test('every series the sidecar registers is documented in docs/monitoring.md, with its labels', async () => {
  const docs = documented();
  const reg = await registered();
  assert.ok(reg.size >= 15, `the registry lists the sidecar's series (${reg.size})`);
  const missing = [...reg.keys()].filter((n) => !docs.has(n));
  assert.deepEqual(missing, [], 'undocumented sidecar series');
  for (const [name, labels] of reg) assert.deepEqual(docs.get(name), labels, `the labels of ${name}`);
});

test('every series docs/monitoring.md documents for the sidecar exists in its registry', async () => {
  const reg = await registered();
  const extra = [...documented().keys()].filter((n) => !reg.has(n));
  assert.deepEqual(extra, [], 'documented but not exported by the sidecar');
});

test('the role and lag series are among them (what on-call reads per pod)', () => {
  const docs = documented();
  for (const name of [
    'redis_operator_pod_role',
    'redis_operator_replication_lag_bytes',
    'redis_operator_pod_link_up',
    'redis_operator_pod_up',
  ])
    assert.deepEqual(docs.get(name), ['namespace', 'pod', 'redis'], name);
});
