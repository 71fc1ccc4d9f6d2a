// The Redis adapter against real servers (INFO, ROLE, errors, switchovers),
// run on Valkey 8.0.1 (which suite runs on which engine: README.md beside this file).
import { runOnEngine } from '../../support/engines.ts';

await runOnEngine('valkey-8.0', 'test/sidecar/adapters/redis/adapter.test.ts');
