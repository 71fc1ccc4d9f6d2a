// The docs cannot drift from the code, both ways: every route, environment variable, alert,
// annotation or label key, CRD field, RBAC grant and metric the pages name exists, and every one
// a user needs (what the server registers, what the processes read, every alert, every key of the
// API group, what the sidecar is granted, every operator metric) is in the docs. The sources are
// read by test/docs/names.ts; a difference fails naming the page and line, or the missing name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  allAlerts,
  DOC_PAGES,
  documentedEnvironment,
  documentedGrants,
  documentedRoutes,
  fieldExists,
  filesUnder,
  namedFields,
  namedKeys,
  operatorKeys,
  operatorMetrics,
  rbacGrants,
  read,
  readEnvironment,
  registeredRoutes,
  tableRows,
} from './names.ts';
import { parseBlocks } from './blocks.ts';
import { DEFAULT_LEASE_NAME } from '../../src/sidecar/config.ts';
import { memberLeaseName, shardLeaseName } from '../../src/sidecar/redis/decide/shards.ts';

const readme = read('README.md');
const monitoring = read('docs/monitoring.md');
const pages = DOC_PAGES.map((p) => ({ page: p, text: read(p) }));

test("routes: README's route table is exactly what the server registers", async () => {
  const registered = await registeredRoutes();
  assert.ok(registered.includes('POST /sync'), `the app's routes were not read: ${registered.join(', ')}`);
  assert.deepEqual(
    documentedRoutes(readme),
    registered,
    "README.md's `| route |` table against the routes src/server registers",
  );
});

test("environment: README's configuration table is exactly what the hook and the sidecar read", () => {
  const readEnv = readEnvironment();
  assert.ok(
    readEnv.includes('OPERATOR_IMAGE') && readEnv.includes('SHARDS'),
    `the config modules were not read: ${readEnv.join(', ')}`,
  );
  assert.deepEqual(
    documentedEnvironment(readme),
    readEnv,
    "README.md's `| variable |` table against src/server/config.ts and src/sidecar/config.ts",
  );
});

test('environment: every variable a page names is read or set somewhere in the repository', async (t) => {
  const known = [
    ...filesUnder('src'),
    ...filesUnder('manifests'),
    ...filesUnder('charts'),
    ...filesUnder('test'),
    ...filesUnder('scripts'),
    ...filesUnder('demo'),
    ...filesUnder('bench'),
    ...filesUnder('.ci', /./),
    ...filesUnder('bin', /./),
    'Dockerfile',
    'package.json',
  ]
    .map((f) => read(f))
    .join('\n');
  for (const { page, text } of pages) {
    await t.test(page, () => {
      const bad = text
        .split('\n')
        .flatMap((l, i) =>
          [...l.matchAll(/`[^`]*`/g)].flatMap((c) =>
            [...c[0].matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)].map((m) => ({ name: m[0], line: i + 1 })),
          ),
        )
        .filter((v) => !new RegExp(`\\b${v.name}\\b`).test(known));
      assert.deepEqual(bad, [], `${page}: variables nothing reads or sets`);
    });
  }
});

test('alerts: README and docs/monitoring.md list every alert, each with a runbook, and the counts they state are right', () => {
  const alerts = allAlerts();
  const inTable = tableRows(readme, 'alert')
    .map((r) => /^\|\s*(\w+)/.exec(r)?.[1])
    .filter((a): a is string => a !== undefined)
    .sort();
  assert.deepEqual(inTable, alerts, "README.md's alert table");
  const runbooks = [...monitoring.matchAll(/^### (Redis\w+)$/gm)].map((m) => m[1]!).sort();
  assert.deepEqual(runbooks, alerts, "docs/monitoring.md's runbook headings");
  const listed = alerts.filter((a) => !new RegExp(`\\b${a}\\b`).test(monitoring.split('## Runbooks')[0] ?? ''));
  assert.deepEqual(listed, [], 'alerts docs/monitoring.md does not list before its runbooks');
  for (const { page, text } of pages)
    for (const m of text.matchAll(/alerts_(?:tested|passed)=(\d+)/g))
      assert.equal(Number(m[1]), alerts.length, `${page}: "${m[0]}", but there are ${alerts.length} alerts`);
  for (const { page, text } of pages)
    for (const m of text.matchAll(/\bRedis(?:Operator)?[A-Z]\w+\b/g))
      if (
        /^Redis(Operator)?[A-Z]/.test(m[0]) &&
        /(Usage|Lag|Down|Master|Masters|Running|Sync|Failovers|Failed|Old|Leader|Unheld|Errors|Hook)$/.test(m[0])
      )
        assert.ok(alerts.includes(m[0]), `${page}: "${m[0]}" is not an alert`);
});

test('keys: every redis.example.com/ key a page names exists, and every key the code uses is in README', async (t) => {
  const keys = operatorKeys();
  assert.ok(keys.includes('role') && keys.includes('switchover'), `src/ was not read: ${keys.join(', ')}`);
  for (const { page, text } of pages)
    await t.test(page, () => {
      const bad = namedKeys(text).filter((k) => !keys.includes(k.key));
      assert.deepEqual(bad, [], `${page}: keys the code never reads or writes`);
    });
  await t.test("README's annotation table", () => {
    const inTable = tableRows(readme, 'key').flatMap((r) =>
      [...(r.split('|')[1] ?? '').matchAll(/redis\.example\.com\/([a-z-]+)/g)].map((m) => m[1]!),
    );
    assert.deepEqual([...new Set(inTable)].sort(), keys, "README.md's `| key |` table against the keys in src/");
  });
});

test('fields: every spec/status path a page names is a field of the CRD it is about', async (t) => {
  for (const { page, text } of [...pages, { page: 'docs/api-reference.md', text: read('docs/api-reference.md') }])
    await t.test(page, () => {
      const bad = namedFields(text).filter((f) => !f.kinds.some((k) => fieldExists(k, f.path)));
      assert.deepEqual(
        bad.map((f) => `${page}:${f.line} ${f.path}`),
        [],
        'paths that are no field of the CRDs',
      );
    });
});

test("RBAC: README's table is manifests/rbac.yaml's grants, and manifests/README.md names each role's resources", () => {
  const roles = rbacGrants();
  const all = new Map<string, string[]>();
  for (const grants of roles.values()) for (const [res, verbs] of grants) all.set(res, verbs);
  assert.deepEqual(
    Object.fromEntries(documentedGrants(readme)),
    Object.fromEntries(all),
    "README.md's `| resource | verbs |` table against manifests/rbac.yaml",
  );
  const manifestsReadme = read('manifests/README.md');
  for (const [role, grants] of roles) {
    const row = manifestsReadme.split('\n').find((l) => l.startsWith('|') && l.includes(`\`${role}\``));
    assert.ok(row, `manifests/README.md has no row for ${role}`);
    const named = [...(row.split('|')[3] ?? '').matchAll(/`([\w/]+)`/g)].map((m) => m[1]!).sort();
    assert.deepEqual(named, [...grants.keys()].sort(), `manifests/README.md's row for ${role}`);
  }
});

test('metrics: every redis_operator_ series a page names is registered, and every one registered is in docs/monitoring.md', () => {
  const metrics = operatorMetrics();
  for (const { page, text } of pages)
    for (const m of text.matchAll(/\bredis_operator_\w+/g))
      // `redis_operator_hook_*` names a family: some metric must start with it.
      assert.ok(
        m[0].endsWith('_') ? metrics.some((x) => x.startsWith(m[0])) : metrics.includes(m[0]),
        `${page}: ${m[0]} is not a metric the operator registers`,
      );
  const undocumented = metrics.filter((m) => !monitoring.includes(m));
  assert.deepEqual(undocumented, [], 'operator metrics docs/monitoring.md does not describe');
});

test('safety: every promise that acknowledged writes are not lost says they are acknowledged with WAIT', () => {
  const promise =
    /(does not|do not|never|not|nothing|no)\b[^.]{0,40}\backnowledged\b[^.]{0,40}\b(lost|lose)|\backnowledged\b[^.]{0,30}\b(is|are) not lost|\backnowledged writes? (is |are )?lost\b/i;
  for (const { page, text } of pages)
    for (const para of text.split(/\n\s*\n/))
      if (promise.test(para)) assert.match(para, /\bWAIT\b/, `${page}: a promise without WAIT:\n${para}`);
});

test('Helm: every block that upgrades the release and applies the CRDs applies the CRDs first (Helm never upgrades them)', () => {
  let both = 0;
  for (const { page, text } of pages)
    for (const b of parseBlocks(page, text)) {
      const lines = b.text.split('\n');
      const upgrade = lines.findIndex((l) => /^\s*helm upgrade /.test(l));
      const crds = lines.findIndex((l) => /^\s*kubectl apply .*charts\/redis-operator\/crds/.test(l));
      if (upgrade < 0 || crds < 0) continue;
      both++;
      assert.ok(
        crds < upgrade,
        `${page}:${b.line + 1 + upgrade}: helm upgrade before the CRDs are applied (line ${b.line + 1 + crds})`,
      );
    }
  assert.ok(both > 0, 'no block upgrades the release: the check reads nothing');
});

test("Leases: every Lease a page names is one the sidecar makes with the manifests' SHARDS", () => {
  const shards = Number(/name: SHARDS\s+value: "(\d+)"/.exec(read('manifests/deployment.yaml'))?.[1]);
  assert.ok(shards >= 1, 'SHARDS was not read from manifests/deployment.yaml');
  const base = DEFAULT_LEASE_NAME;
  const made = new Set([
    ...Array.from({ length: shards }, (_, i) => shardLeaseName(base, i, shards)),
    shardLeaseName(base, 0, shards).replace(/0$/, 'N'),
    memberLeaseName(base, '<pod>'),
  ]);
  const bad: string[] = [];
  for (const { page, text } of pages)
    text.split('\n').forEach((l, i) => {
      // A name right after "Lease" or right before it: `the Lease \`ns/name\``, `\`name\` Lease`.
      for (const m of l.matchAll(
        /\bLeases? `(?:[a-z0-9-]+\/)?(redis-operator-sidecar[\w<>-]*)`|`(?:[a-z0-9-]+\/)?(redis-operator-sidecar[\w<>-]*)` Leases?\b/g,
      )) {
        const name = (m[1] ?? m[2])!;
        if (!made.has(name) && !(name === base && /SHARDS=1\b|SHARDS` is 1|one Lease/.test(l)))
          bad.push(`${page}:${i + 1}: Lease \`${name}\``);
      }
    });
  assert.deepEqual(
    bad,
    [],
    `Leases the sidecar does not make with SHARDS=${shards} (it makes ${[...made].join(', ')})`,
  );
});
