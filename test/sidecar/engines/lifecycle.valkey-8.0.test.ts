// The day-2 suite (planned switchover, password rotation, nodes of an earlier version),
// run on Valkey 8.0.1 (which suite runs on which engine: README.md beside this file).
import { runOnEngine } from '../../support/engines.ts';

await runOnEngine('valkey-8.0', 'test/sidecar/redis/manager/lifecycle.test.ts');
