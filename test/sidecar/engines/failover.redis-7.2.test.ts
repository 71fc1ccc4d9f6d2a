// The core failover suite (SIGKILL and SIGSTOP of the master under SET + WAIT 1),
// run on Redis 7.2.6 (which suite runs on which engine: README.md beside this file).
import { runOnEngine } from '../../support/engines.ts';

await runOnEngine('redis-7.2', 'test/sidecar/redis/manager/failover.test.ts');
