// Writes manifests/crd.yaml, manifests/redisbackup-crd.yaml and manifests/rediscluster-crd.yaml from src/api (the
// single source of the Redis API), and the same bytes into the Helm chart's crds/ (charts/redis-operator/crds/), so the
// chart is no second copy.
// `npm run gen:crd`; test/api/crd.test.ts fails when the committed file differs from this output, and
// test/charts/chart.test.ts when the chart's copy does.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCrdYaml, renderRedisBackupCrdYaml, renderRedisClusterCrdYaml } from '../src/api/crd.ts';

for (const [file, render] of [
  ['crd.yaml', renderCrdYaml],
  ['redisbackup-crd.yaml', renderRedisBackupCrdYaml],
  ['rediscluster-crd.yaml', renderRedisClusterCrdYaml],
] as const) {
  for (const dir of ['../manifests/', '../charts/redis-operator/crds/']) {
    const target = fileURLToPath(new URL(`${dir}${file}`, import.meta.url));
    writeFileSync(target, render());
    console.log(`wrote ${target}`);
  }
}
