// The alert rules against the real promtool (Prometheus 2.42, test/monitoring/tools.ts): the
// rules each Redis gets (rendered by the hook for a table of specs) and the operator's own pass
// `promtool check rules` with its lint made fatal; every alert has exactly one unit-test file
// (test/monitoring/rules/<Alert>.test.yaml) and each passes `promtool test rules`, one subtest per
// alert; every query of the Grafana dashboard parses. Without promtool these tests fail with the
// command that fetches it (monitoringTools() throws), never skip.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { ALERT_NAMES, ALERT_DEFAULTS } from '../../src/api/monitoring.ts';
import { promtool } from './prometheus.ts';
import {
  OPERATOR_RULE_FILE,
  REDIS_RULE_FILE,
  RULE_TESTS_DIR,
  alertNames,
  alertOfTestFile,
  operatorRuleFile,
  redisRuleFile,
  ruleTestFiles,
  runAlertTest,
  sampleRuleFile,
  sampleSpecInput,
  validSpec,
  writeRuleFixture,
  type RuleFixture,
} from './rule-files.ts';

const DASHBOARD = fileURLToPath(
  new URL('../../manifests/components/monitoring/grafana-dashboard.json', import.meta.url),
);
const S3 = { s3: { bucket: 'backups', region: 'us-east-1' } };

let dir: string;
before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'redis-rules-check-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * `promtool check rules` on one file with every lint on and fatal: promtool 2.42 only prints a
 * lint problem (duplicate rules) and still exits 0 unless told otherwise.
 */
async function checkRules(file: string, text: string): Promise<{ rules: number }> {
  const p = path.join(dir, file);
  writeFileSync(p, text);
  const r = await promtool(['check', 'rules', '--lint=all', '--lint-fatal', p]);
  const output = `${r.stdout}${r.stderr}`.trim();
  assert.equal(r.code, 0, `promtool check rules ${file}:\n${output}`);
  const found = /SUCCESS: (\d+) rules found/.exec(output);
  assert.ok(found, `promtool check rules ${file} reported no success:\n${output}`);
  return { rules: Number(found[1]) };
}

const ruleCount = (text: string) =>
  (parse(text) as { groups: Array<{ rules: unknown[] }> }).groups.reduce((n, g) => n + g.rules.length, 0);

/** Every alert overridden at once: thresholds in each unit's other spelling, other durations and severities. */
function everyAlertOverridden(): Array<Record<string, unknown>> {
  const threshold: Partial<Record<string, string | number>> = {
    HighMemoryUsage: '75%',
    ReplicationLag: '30s',
    FrequentFailovers: 5,
    BackupTooOld: '1.5',
  };
  return ALERT_NAMES.map((name, i) => ({
    name,
    ...(ALERT_DEFAULTS[name].unit !== 'none' ? { threshold: threshold[name] } : {}),
    duration: name === 'FrequentFailovers' ? '30m' : '2m30s',
    severity: (['critical', 'warning', 'info'] as const)[i % 3],
  }));
}

const VARIANTS: Array<{ name: string; namespace?: string; redis?: string; spec: Record<string, unknown> }> = [
  { name: 'the sample Redis the unit tests run against', spec: sampleSpecInput() },
  { name: 'every default', spec: {} },
  { name: 'no exporter', spec: { ...sampleSpecInput(), monitoring: { exporter: { enabled: false } } } },
  { name: 'replicas 0', spec: { ...sampleSpecInput(), replicas: 0 } },
  { name: 'hibernating (with backups: only BackupFailed is left)', spec: { ...sampleSpecInput(), hibernate: true } },
  { name: 'hibernating without backups (no rules at all)', spec: { hibernate: true } },
  {
    name: 'backups suspended',
    spec: { ...sampleSpecInput(), backup: { schedule: '0 */6 * * *', suspend: true, storage: S3 } },
  },
  {
    name: 'backups @daily',
    spec: { ...sampleSpecInput(), backup: { schedule: '@daily', storage: { pvc: { claimName: 'backups' } } } },
  },
  { name: 'every alert overridden', spec: { ...sampleSpecInput(), monitoring: { alerts: everyAlertOverridden() } } },
  {
    name: 'every alert disabled',
    spec: { ...sampleSpecInput(), monitoring: { alerts: ALERT_NAMES.map((name) => ({ name, enabled: false })) } },
  },
  {
    name: 'the longest names (a 63-character namespace, a 40-character Redis)',
    namespace: 'payments-europe-west-production-cluster-blue-green-canary-stage',
    redis: 'orders-cache-for-the-checkout-service-eu',
    spec: sampleSpecInput(),
  },
];

describe('promtool check rules', () => {
  for (const v of VARIANTS) {
    test(`the rules of a Redis: ${v.name}`, async () => {
      const namespace = v.namespace ?? 'shop';
      const name = v.redis ?? 'cache';
      const text = redisRuleFile(namespace, name, validSpec(name, v.spec));
      const { rules } = await checkRules(`redis-${namespace}-${name}.rules.yaml`, text);
      assert.equal(rules, ruleCount(text), 'promtool counts every rule rendered');
    });
  }

  test("the operator's own rules (operator-rules.yaml)", async () => {
    const text = operatorRuleFile();
    const { rules } = await checkRules(OPERATOR_RULE_FILE, text);
    assert.equal(rules, ruleCount(text));
  });
});

describe('every alert has exactly one unit-test file', () => {
  test('the sample Redis renders every alert of the catalog, so the unit tests can cover them all', () => {
    const rendered = new Set(alertNames(sampleRuleFile()));
    assert.deepEqual(
      ALERT_NAMES.map((n) => `Redis${n}`).filter((a) => !rendered.has(a)),
      [],
    );
  });

  test('the test files are the alerts of the sample and of operator-rules.yaml, no more, no less', () => {
    const alerts = [...new Set([...alertNames(sampleRuleFile()), ...alertNames(operatorRuleFile())])].sort();
    const tested = ruleTestFiles().map(alertOfTestFile).sort();
    assert.deepEqual(
      alerts.filter((a) => !tested.includes(a)),
      [],
      'alerts without test/monitoring/rules/<Alert>.test.yaml',
    );
    assert.deepEqual(
      tested.filter((a) => !alerts.includes(a)),
      [],
      'test files for no alert',
    );
  });

  test('each test file loads the rule file its alert is in', () => {
    const redisAlerts = new Set(alertNames(sampleRuleFile()));
    for (const f of ruleTestFiles()) {
      const ruleFiles = (parse(readFileSync(path.join(RULE_TESTS_DIR, f), 'utf8')) as { rule_files?: string[] })
        .rule_files;
      assert.deepEqual(ruleFiles, [redisAlerts.has(alertOfTestFile(f)) ? REDIS_RULE_FILE : OPERATOR_RULE_FILE], f);
    }
  });
});

describe('promtool test rules, one alert at a time', () => {
  let fixture: RuleFixture;
  before(() => {
    fixture = writeRuleFixture();
  });
  after(() => fixture?.cleanup());

  for (const file of ruleTestFiles()) {
    test(alertOfTestFile(file), async () => {
      const r = await runAlertTest(fixture, file);
      assert.ok(r.passed, `promtool test rules ${file}:\n${r.output}`);
    });
  }

  test('a unit test expecting the wrong thing fails (the verdict is not vacuous)', async () => {
    // RedisNoMaster fires with no series at all; a test saying it does not must fail.
    writeFileSync(
      path.join(fixture.dir, 'wrong.test.yaml'),
      stringify({
        rule_files: [REDIS_RULE_FILE],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [],
            alert_rule_test: [{ eval_time: '5m', alertname: 'RedisNoMaster', exp_alerts: [] }],
          },
        ],
      }),
    );
    const r = await runAlertTest(fixture, 'wrong.test.yaml');
    assert.equal(r.passed, false, r.output);
    assert.match(r.output, /RedisNoMaster/);
  });
});

interface Panel {
  title?: string;
  targets?: Array<{ expr?: string; refId?: string }>;
  panels?: Panel[];
}

/** A dashboard query with Grafana's variables replaced by what a query may hold there. */
function concrete(query: string, where: string): string {
  const text = query.replaceAll('$__rate_interval', '5m').replaceAll('$namespace', '.*').replaceAll('$redis', '.*');
  assert.doesNotMatch(text, /\$/, `${where}: a variable this test does not know how to substitute: ${text}`);
  return text;
}

/** A template variable's query: label_values(<selector>, <label>) is its selector, anything else must be PromQL. */
function templateExpr(query: string): string {
  const m = /^\s*label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$/s.exec(query);
  assert.ok(
    m || !query.trim().startsWith('label_values('),
    `label_values without a selector cannot be parsed: ${query}`,
  );
  return m ? m[1]! : query;
}

test('every query of the Grafana dashboard parses (as recording rules through promtool)', async () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels?: Panel[];
    templating?: { list?: Array<{ name: string; type: string; query?: unknown }> };
  };
  const rules: Array<{ record: string; expr: string }> = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) {
        assert.ok(t.expr, `panel "${p.title}" target ${t.refId} has no expr`);
        rules.push({ record: `dashboard:panel_target:${rules.length}`, expr: concrete(t.expr, `panel "${p.title}"`) });
      }
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels ?? []);
  const targets = rules.length;
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    // Grafana stores a query variable's query as a string or as {query, refId}.
    const q = typeof v.query === 'string' ? v.query : (v.query as { query?: string } | undefined)?.query;
    assert.ok(q, `template variable ${v.name} has no query`);
    rules.push({
      record: `dashboard:template:${v.name}`,
      expr: concrete(templateExpr(q), `template variable ${v.name}`),
    });
  }
  assert.ok(
    targets > 0 && rules.length > targets,
    `the dashboard has panel targets (${targets}) and template queries (${rules.length - targets})`,
  );
  const { rules: found } = await checkRules(
    'dashboard.rules.yaml',
    stringify({ groups: [{ name: 'dashboard', rules }] }),
  );
  assert.equal(found, rules.length);
});
