// The Redis adapter against real servers (INFO, ROLE, errors, switchovers),
// run on Redis 7.2.6 (which suite runs on which engine: README.md beside this file).
import { runOnEngine } from '../../support/engines.ts';

await runOnEngine('redis-7.2', 'test/sidecar/adapters/redis/adapter.test.ts');
