// Writes manifests/crd.yaml from src/api (the single source of the Redis API).
// `npm run gen:crd`; test/api/crd.test.ts fails when the committed file differs from this output.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCrdYaml } from '../src/api/crd.ts';

const target = fileURLToPath(new URL('../manifests/crd.yaml', import.meta.url));
writeFileSync(target, renderCrdYaml());
console.log(`wrote ${target}`);
