// Writes manifests/crd.yaml and manifests/redisbackup-crd.yaml from src/api (the single source of the Redis API).
// `npm run gen:crd`; test/api/crd.test.ts fails when the committed file differs from this output.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCrdYaml, renderRedisBackupCrdYaml } from '../src/api/crd.ts';

for (const [file, render] of [
  ['crd.yaml', renderCrdYaml],
  ['redisbackup-crd.yaml', renderRedisBackupCrdYaml],
] as const) {
  const target = fileURLToPath(new URL(`../manifests/${file}`, import.meta.url));
  writeFileSync(target, render());
  console.log(`wrote ${target}`);
}
