// The core failover suite (SIGKILL and SIGSTOP of the master under SET + WAIT 1),
// run on Valkey 8.0.1 (which suite runs on which engine: README.md beside this file).
import { runOnEngine } from '../../support/engines.ts';

await runOnEngine('valkey-8.0', 'test/sidecar/redis/manager/failover.test.ts');
