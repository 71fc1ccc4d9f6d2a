// The cluster phase's lanes (test/lanes.ts), pure: every file in exactly one lane, a group's files
// in the same lane, the lanes within the longest single unit of each other, the shared scenarios last.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignLanes } from './lanes.ts';

const files = [
  'test/e2e/local.test.ts',
  'test/system/rediscluster.test.ts',
  'test/system/rediscluster-faults.test.ts',
  'test/system/helm.test.ts',
  'test/system/monitoring.test.ts',
  'test/k8s/real-cluster.test.ts',
  'test/system/apply.test.ts',
  'test/system/day2.test.ts',
  'test/system/plugin-ops.test.ts',
  'test/system/backup.test.ts',
  'test/system/a-new-scenario.test.ts',
];

test('lanes: each file once, the three-node clusters in one lane, shared scenarios after the rest', () => {
  const lanes = assignLanes(files, 2);
  assert.equal(lanes.length, 2);
  assert.deepEqual(lanes.flat().sort(), [...files].sort(), 'every file in exactly one lane');
  const laneOf = (f: string) => lanes.findIndex((l) => l.includes(f));
  assert.equal(
    laneOf('test/e2e/local.test.ts'),
    laneOf('test/system/rediscluster.test.ts'),
    'the three-node clusters never run side by side',
  );
  assert.equal(
    laneOf('test/system/rediscluster-faults.test.ts'),
    laneOf('test/system/rediscluster.test.ts'),
    'nor the RedisCluster fault run beside them',
  );
  for (const lane of lanes) {
    const shared = lane.map((f) => ['apply', 'day2', 'plugin-ops', 'backup'].some((n) => f.endsWith(`/${n}.test.ts`)));
    assert.deepEqual(
      shared,
      [...shared].sort((a, b) => Number(a) - Number(b)),
      `shared scenarios last in ${lane.join(', ')}`,
    );
  }
});

test('lanes: one lane takes everything; more lanes than files leave none empty', () => {
  assert.deepEqual(assignLanes(files, 1)[0]!.slice().sort(), [...files].sort());
  assert.deepEqual(assignLanes(['test/system/apply.test.ts'], 3), [['test/system/apply.test.ts']]);
});
