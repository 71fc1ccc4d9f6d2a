// Writes docs/api-reference.md from src/api (the CRDs' own schema, via src/api/reference.ts).
// `npm run gen:api-reference`; test/api/reference.test.ts fails when the committed file differs from this output.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderApiReference } from '../src/api/reference.ts';

const target = fileURLToPath(new URL('../docs/api-reference.md', import.meta.url));
writeFileSync(target, renderApiReference());
console.log(`wrote ${target}`);
