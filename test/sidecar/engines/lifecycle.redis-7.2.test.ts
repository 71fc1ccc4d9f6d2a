// The day-2 suite (planned switchover, password rotation, nodes of an earlier version),
// run on Redis 7.2.6 (which suite runs on which engine: README.md beside this file).
import { runOnEngine } from '../../support/engines.ts';

await runOnEngine('redis-7.2', 'test/sidecar/redis/manager/lifecycle.test.ts');
