// The RedisBackup CRD, without a server: committed file in sync with the source, a valid
// apiextensions object, and the columns `kubectl get redisbackup` shows. The API server accepting
// it as structural, and its CEL rules (the spec immutable), are crd-server.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { buildRedisBackupCrd, REDISBACKUP_CRD_NAME, renderRedisBackupCrdYaml } from '../../src/api/crd.ts';

const FILE = fileURLToPath(new URL('../../manifests/redisbackup-crd.yaml', import.meta.url));
const json = (x: unknown) => JSON.parse(JSON.stringify(x)) as Record<string, any>;

test('manifests/redisbackup-crd.yaml is what the source generates', () => {
  const committed = readFileSync(FILE, 'utf8');
  assert.equal(
    committed,
    renderRedisBackupCrdYaml(),
    'manifests/redisbackup-crd.yaml is stale: run npm run gen:crd and commit the result',
  );
  assert.deepEqual(parse(committed), json(buildRedisBackupCrd()));
});

test('the RedisBackup CRD is a valid v1 object', () => {
  assert.doesNotThrow(() => new CustomResourceDefinition(json(buildRedisBackupCrd()) as never).validate());
});

test('names, status subresource and the columns a user reads', () => {
  const crd = json(buildRedisBackupCrd());
  assert.equal(crd['metadata'].name, REDISBACKUP_CRD_NAME);
  assert.equal(REDISBACKUP_CRD_NAME, 'redisbackups.redis.example.com');
  const version = crd['spec'].versions[0];
  assert.deepEqual(version.subresources, { status: {} });
  const columns = (version.additionalPrinterColumns as Array<{ name: string; priority?: number }>)
    .filter((c) => c.priority === undefined)
    .map((c) => c.name);
  assert.deepEqual(columns, [
    'Redis',
    'RedisCluster',
    'Phase',
    'Size',
    'Offset',
    'Version',
    'Started',
    'Completed',
    'Age',
  ]);
  assert.deepEqual(crd['spec'].versions[0].schema.openAPIV3Schema.required, ['spec']);
});
