// The Leases the on-call texts send people to exist. The operator's alert texts (the kustomize
// component's and the chart's) and their runbooks in docs/monitoring.md name the sidecar's
// leadership Leases; with the shipped SHARDS (manifests/deployment.yaml, the chart's values) and
// with SHARDS=1, each text must name the Leases that then exist and no other, the names computed
// by the sidecar's own functions (decide/shards.ts) from its default LEASE_NAME.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { DEFAULT_LEASE_NAME } from '../../src/sidecar/config.ts';
import { memberLeaseName, shardLeaseName } from '../../src/sidecar/redis/decide/shards.ts';

const read = (rel: string) => readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');
type Json = Record<string, unknown>;

/** SHARDS as the Deployment manifest sets it. */
function shippedShards(): number {
  const docs = read('manifests/deployment.yaml');
  const m = /- name: SHARDS\s+value: "(\d+)"/.exec(docs);
  assert.ok(m, 'manifests/deployment.yaml sets SHARDS');
  return Number(m[1]);
}

/** The Lease names a text may write: a literal name that exists, or a shard/member name with a placeholder. */
function leaseNamesIn(text: string): string[] {
  return [...text.matchAll(/redis-operator-sidecar(?:-[A-Za-z0-9<>*-]*[A-Za-z0-9>*])?/g)].map((m) => m[0]);
}

/** Whether `name` is a Lease the sidecars keep with `shards` shards (placeholders stand for any index or pod). */
function exists(name: string, shards: number): boolean {
  const base = DEFAULT_LEASE_NAME;
  if (shards <= 1) return name === shardLeaseName(base, 0, 1) || name.startsWith(memberLeaseName(base, ''));
  const shard = /^redis-operator-sidecar-shard-(\d+|<SHARDS-1>|N|\*)$/.exec(name);
  if (shard) return !/^\d+$/.test(shard[1]!) || shardLeaseName(base, Number(shard[1]), shards) === name;
  return name.startsWith(memberLeaseName(base, ''));
}

/**
 * A text that sends on-call to Leases: it names the Lease that exists under the shipped SHARDS and under SHARDS=1, and
 * only Leases that exist under one of them.
 */
function assertNamesExistingLeases(where: string, text: string): void {
  const shards = shippedShards();
  const names = leaseNamesIn(text);
  assert.ok(names.length > 0, `${where} names no Lease: ${text}`);
  for (const n of names)
    assert.ok(
      exists(n, shards) || exists(n, 1),
      `${where}: ${n} is no Lease the sidecars keep (SHARDS ${shards} or 1)`,
    );
  assert.ok(
    names.includes(shardLeaseName(DEFAULT_LEASE_NAME, 0, shards)),
    `${where} names ${shardLeaseName(DEFAULT_LEASE_NAME, 0, shards)} (SHARDS=${shards}): ${text}`,
  );
  assert.ok(
    names.includes(shardLeaseName(DEFAULT_LEASE_NAME, 0, 1)),
    `${where} names ${shardLeaseName(DEFAULT_LEASE_NAME, 0, 1)} (SHARDS=1): ${text}`,
  );
}

const LEASE_ALERTS = ['RedisOperatorNoLeader', 'RedisOperatorShardUnheld'];

function rules(yamlText: string): Json[] {
  const doc = parse(yamlText) as { spec: { groups: Array<{ rules: Json[] }> } };
  return doc.spec.groups.flatMap((g) => g.rules);
}

test('the shipped SHARDS is above 1, so the single Lease redis-operator-sidecar does not exist as installed', () => {
  assert.ok(shippedShards() > 1);
  assert.equal(exists(DEFAULT_LEASE_NAME, shippedShards()), false);
  assert.match(
    read('charts/redis-operator/values.yaml'),
    new RegExp(`\\n  shards: ${shippedShards()}\\n`),
    "the chart's default is the same",
  );
});

test("the operator's alert texts name Leases that exist, with the shipped SHARDS and with SHARDS=1", async (t) => {
  const sources: Array<[string, string]> = [
    [
      'manifests/components/monitoring/operator-rules.yaml',
      read('manifests/components/monitoring/operator-rules.yaml'),
    ],
    // The chart's template: its Helm actions are not YAML; the namespace one becomes a name here.
    [
      'charts/redis-operator/templates/monitoring-rules.yaml',
      read('charts/redis-operator/templates/monitoring-rules.yaml')
        .replace(/^\s*\{\{-? (?!include)[^`]*\}\}\s*$/gm, '')
        .replace(/\{\{ \$runbooks \}\}/g, 'docs/monitoring.md')
        .replace(/\{\{`(.*?)`\}\}/g, '$1')
        .replace(/\{\{ \.Release\.Namespace \}\}/g, 'redis-operator')
        .replace(/\{\{ \.Values\.sidecar\.shards \}\}/g, String(shippedShards()))
        .replace(/\{\{-? include .*\}\}/g, '{}'),
    ],
  ];
  for (const [file, text] of sources) {
    const byName = new Map(rules(text).map((r) => [String(r['alert']), r['annotations'] as Json]));
    for (const alert of LEASE_ALERTS) {
      await t.test(`${file} ${alert}`, () => {
        const annotations = byName.get(alert);
        assert.ok(annotations, `${alert} is in ${file}`);
        assertNamesExistingLeases(
          `${file} ${alert}`,
          `${String(annotations['summary'])} ${String(annotations['description'])}`,
        );
      });
    }
  }
});

test('docs/monitoring.md: the runbooks of the Lease alerts name Leases that exist', async (t) => {
  const doc = read('docs/monitoring.md');
  for (const alert of LEASE_ALERTS) {
    await t.test(alert, () => {
      const section = new RegExp(`\\n### ${alert}\\n([\\s\\S]*?)(?=\\n##)`).exec(doc)?.[1];
      assert.ok(section, `docs/monitoring.md has a runbook for ${alert}`);
      assertNamesExistingLeases(`docs/monitoring.md#${alert.toLowerCase()}`, section);
    });
  }
});
