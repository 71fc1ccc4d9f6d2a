// spec.monitoring: the design article's alert block is accepted as written, every threshold is
// read in its alert's own unit, and a bad field is named (never silently dropped).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ALERT_NAMES,
  durationSeconds,
  readThreshold,
  resolveAlerts,
  type AlertName,
} from '../../src/api/monitoring.ts';
import { validateSpec } from '../../src/api/validate.ts';

test("the design article's monitoring block is valid and overrides only what it names", () => {
  const verdict = validateSpec('order-cache', {
    monitoring: {
      enabled: true,
      alerts: [
        { name: 'HighMemoryUsage', threshold: 80, duration: '5m' },
        { name: 'ReplicationLag', threshold: '10s' },
      ],
    },
  });
  assert.ok(verdict.ok, JSON.stringify(verdict));
  const alerts = resolveAlerts(verdict.spec.monitoring.alerts);
  assert.deepEqual(
    alerts.map((a) => a.name),
    [...ALERT_NAMES],
    'every alert is on by default',
  );
  const byName = new Map(alerts.map((a) => [a.name, a]));
  assert.deepEqual(byName.get('HighMemoryUsage'), {
    name: 'HighMemoryUsage',
    threshold: 80,
    duration: '5m',
    severity: 'warning',
    source: 'exporter',
  });
  assert.deepEqual(byName.get('ReplicationLag'), {
    name: 'ReplicationLag',
    threshold: 10,
    duration: '1m',
    severity: 'warning',
    source: 'exporter',
  });
});

test('an alert can be turned off, or given another duration and severity', () => {
  const alerts = resolveAlerts([
    { name: 'NoMaster', enabled: false },
    { name: 'FrequentFailovers', enabled: true, threshold: '5', duration: '30m', severity: 'critical' },
  ]);
  assert.equal(
    alerts.find((a) => a.name === 'NoMaster'),
    undefined,
  );
  assert.deepEqual(
    alerts.find((a) => a.name === 'FrequentFailovers'),
    { name: 'FrequentFailovers', threshold: 5, duration: '30m', severity: 'critical', source: 'sidecar' },
  );
});

test('thresholds are read in the unit of their alert', async (t) => {
  const cases: Array<[AlertName, string | number | undefined, number | undefined | 'refused']> = [
    ['HighMemoryUsage', 80, 80],
    ['HighMemoryUsage', '80%', 80],
    ['HighMemoryUsage', '92.5', 92.5],
    ['HighMemoryUsage', 0, 'refused'],
    ['HighMemoryUsage', 101, 'refused'],
    ['HighMemoryUsage', '10s', 'refused'],
    ['HighMemoryUsage', undefined, 80],
    ['ReplicationLag', '10s', 10],
    ['ReplicationLag', 30, 30],
    ['ReplicationLag', '1m30s', 90],
    ['ReplicationLag', '0s', 'refused'],
    ['ReplicationLag', '80%', 'refused'],
    ['FrequentFailovers', 0, 0],
    ['FrequentFailovers', '3', 3],
    ['FrequentFailovers', '2.5', 'refused'],
    ['BackupTooOld', '1.5', 1.5],
    ['BackupTooOld', 2, 2],
    ['BackupTooOld', '0.5', 'refused'],
    ['NoMaster', 1, 'refused'],
    ['NoMaster', undefined, undefined],
  ];
  for (const [name, written, expected] of cases) {
    await t.test(`${name} ${JSON.stringify(written)}`, () => {
      const r = readThreshold(name, written);
      if (expected === 'refused') {
        assert.equal(r.ok, false);
        if (!r.ok) assert.ok(r.message.length > 10, r.message);
      } else assert.deepEqual(r, { ok: true, value: expected });
    });
  }
});

test('Prometheus durations', async (t) => {
  const cases: Array<[string, number | undefined]> = [
    ['5m', 300],
    ['1h30m', 5400],
    ['10s', 10],
    ['250ms', 0.25],
    ['1w', 604800],
    ['0', 0],
    ['0s', 0],
    ['', undefined],
    ['5 m', undefined],
    ['m5', undefined],
    ['30m1h', undefined],
  ];
  for (const [text, seconds] of cases)
    await t.test(JSON.stringify(text), () => assert.equal(durationSeconds(text), seconds));
});

test('a bad monitoring field is refused and named', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['unknown alert', { alerts: [{ name: 'TooHot' }] }, 'spec.monitoring.alerts.0.name'],
    [
      'percentage out of range',
      { alerts: [{ name: 'HighMemoryUsage', threshold: 180 }] },
      'spec.monitoring.alerts[0].threshold',
    ],
    [
      'threshold on an alert without one',
      { alerts: [{ name: 'InstanceDown', threshold: 1 }] },
      'spec.monitoring.alerts[0].threshold',
    ],
    [
      'duration not a Prometheus duration',
      { alerts: [{ name: 'NoMaster', duration: 'five minutes' }] },
      'spec.monitoring.alerts.0.duration',
    ],
    [
      'an empty failover window',
      { alerts: [{ name: 'FrequentFailovers', duration: '0s' }] },
      'spec.monitoring.alerts[0].duration',
    ],
    [
      'an alert listed twice',
      {
        alerts: [
          { name: 'NoMaster', duration: '1m' },
          { name: 'NoMaster', duration: '2m' },
        ],
      },
      'spec.monitoring.alerts[1].name',
    ],
    [
      'a scrape interval that is no duration',
      { prometheus: { scrapeInterval: 'often' } },
      'spec.monitoring.prometheus.scrapeInterval',
    ],
    [
      'a label key Kubernetes refuses',
      { prometheus: { labels: { 'bad key': 'x' } } },
      'spec.monitoring.prometheus.labels.bad key',
    ],
    ['an exporter without an image', { exporter: { image: '' } }, 'spec.monitoring.exporter.image'],
    [
      'exporter memory not a quantity',
      { exporter: { resources: { limits: { memory: 'lots' } } } },
      'spec.monitoring.exporter.resources.limits.memory',
    ],
  ];
  for (const [name, monitoring, field] of cases) {
    await t.test(name, () => {
      const verdict = validateSpec('r', { monitoring });
      assert.equal(verdict.ok, false, name);
      if (verdict.ok) return;
      assert.ok(
        verdict.problems.some((p) => p.field === field),
        `${name}: expected ${field} in ${JSON.stringify(verdict.problems)}`,
      );
    });
  }
});
