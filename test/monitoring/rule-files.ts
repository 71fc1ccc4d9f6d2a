// The rule files the promtool unit tests (test/monitoring/rules/<Alert>.test.yaml) run against,
// and running them. Owns the sample Redis those tests are written for, rendering its
// PrometheusRule and the operator's static one into plain rule files, and the per-alert verdicts
// (rules.test.ts asserts them; a check:monitoring script prints them).
// Invariants:
// - The sample is fixed (shop/cache, 2 replicas, backups every 6 h, the design article's alert
//   block): the test files spell out its thresholds, descriptions and runbook URLs, so changing it
//   means changing them.
// - Rule files are rendered through the hook's own desiredPrometheusRule and read from the very
//   manifest kustomize ships, never copied: a rule that changes is tested as it changed.
// - The test files reference the rule files by bare name, so both go into one directory
//   (promtool resolves rule_files against the test file's directory).
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import type { RedisSpec } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { DEFAULT_RUNBOOK_BASE_URL } from '../../src/hook/index.ts';
import { desiredPrometheusRule } from '../../src/hook/redis/monitoring/objects.ts';
import { promtool } from './prometheus.ts';

export const SAMPLE_NAMESPACE = 'shop';
export const SAMPLE_NAME = 'cache';
export const REDIS_RULE_FILE = `redis-${SAMPLE_NAMESPACE}-${SAMPLE_NAME}.rules.yaml`;
export const OPERATOR_RULE_FILE = 'operator.rules.yaml';
export const RULE_TESTS_DIR = fileURLToPath(new URL('./rules/', import.meta.url));
export const OPERATOR_RULES_MANIFEST = fileURLToPath(
  new URL('../../manifests/components/monitoring/operator-rules.yaml', import.meta.url),
);
const TEST_SUFFIX = '.test.yaml';

type Json = Record<string, unknown>;

/** The sample Redis's spec as a user writes it (before defaults). */
export function sampleSpecInput(): Json {
  return {
    replicas: 2,
    backup: { schedule: '0 */6 * * *', retention: 7, storage: { s3: { bucket: 'backups', region: 'us-east-1' } } },
    monitoring: {
      alerts: [
        { name: 'HighMemoryUsage', threshold: 80, duration: '5m' },
        { name: 'ReplicationLag', threshold: '10s' },
      ],
    },
  };
}

/** `input` through the real validator (defaults applied); throws with its problems when it is refused. */
export function validSpec(name: string, input: unknown): RedisSpec {
  const v = validateSpec(name, input);
  if (!v.ok) throw new Error(`spec of ${name} refused: ${JSON.stringify(v.problems)}`);
  return v.spec;
}

/** A Prometheus rule file (`{groups}`) holding what the hook attaches as the PrometheusRule of `namespace/name`. */
export function redisRuleFile(namespace: string, name: string, spec: RedisSpec): string {
  const rule = desiredPrometheusRule(namespace, name, spec, DEFAULT_RUNBOOK_BASE_URL);
  return stringify({ groups: (rule['spec'] as { groups: unknown[] }).groups });
}

export function sampleRuleFile(): string {
  return redisRuleFile(SAMPLE_NAMESPACE, SAMPLE_NAME, validSpec(SAMPLE_NAME, sampleSpecInput()));
}

/** operator-rules.yaml's spec.groups as a rule file. */
export function operatorRuleFile(): string {
  const manifest = parse(readFileSync(OPERATOR_RULES_MANIFEST, 'utf8')) as {
    kind?: string;
    spec?: { groups?: unknown[] };
  };
  if (manifest.kind !== 'PrometheusRule' || !Array.isArray(manifest.spec?.groups))
    throw new Error(`${OPERATOR_RULES_MANIFEST} is no PrometheusRule with spec.groups`);
  return stringify({ groups: manifest.spec.groups });
}

/** The distinct alert names of a rule file, in order of first appearance (BackupTooOld has two rules). */
export function alertNames(ruleFileText: string): string[] {
  const file = parse(ruleFileText) as { groups: Array<{ rules: Array<{ alert?: string }> }> };
  const names = file.groups.flatMap((g) => g.rules.flatMap((r) => (r.alert !== undefined ? [r.alert] : [])));
  return [...new Set(names)];
}

/** The unit-test files, sorted: `<AlertName>.test.yaml`. */
export function ruleTestFiles(): string[] {
  return readdirSync(RULE_TESTS_DIR)
    .filter((f) => f.endsWith(TEST_SUFFIX))
    .sort();
}

export function alertOfTestFile(file: string): string {
  return path.basename(file, TEST_SUFFIX);
}

export interface RuleFixture {
  dir: string;
  /** Test file names (inside dir). */
  testFiles: string[];
  cleanup(): void;
}

/** A temporary directory with both rule files and a copy of every unit-test file. */
export function writeRuleFixture(): RuleFixture {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'redis-rule-tests-'));
  try {
    writeFileSync(path.join(dir, REDIS_RULE_FILE), sampleRuleFile());
    writeFileSync(path.join(dir, OPERATOR_RULE_FILE), operatorRuleFile());
    const testFiles = ruleTestFiles();
    for (const f of testFiles) cpSync(path.join(RULE_TESTS_DIR, f), path.join(dir, f));
    return { dir, testFiles, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface AlertTestResult {
  alert: string;
  file: string;
  passed: boolean;
  /** promtool's stdout and stderr, for a failure message. */
  output: string;
}

/** `promtool test rules` on one test file of the fixture. */
export async function runAlertTest(fixture: RuleFixture, file: string): Promise<AlertTestResult> {
  const r = await promtool(['test', 'rules', path.join(fixture.dir, file)]);
  return { alert: alertOfTestFile(file), file, passed: r.code === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

/**
 * Every unit-test file, one promtool run each (so a failure names its alert). Rejects only when
 * promtool cannot be run at all (monitoringTools() says what to fetch).
 */
export async function runAlertTests(): Promise<AlertTestResult[]> {
  const fixture = writeRuleFixture();
  try {
    const results: AlertTestResult[] = [];
    // One at a time: the machine's cores are shared with other runs, and 13 runs take seconds.
    for (const f of fixture.testFiles) results.push(await runAlertTest(fixture, f));
    return results;
  } finally {
    fixture.cleanup();
  }
}
