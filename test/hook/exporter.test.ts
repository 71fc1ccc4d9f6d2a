// The exporter container and the <name>-metrics Service (issue 12): on by default, logging in as
// the operator's user, over TLS with spec.tls, never able to make a Redis pod NotReady, and
// gone (with its Service) when monitoring or the exporter is turned off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { podSelectorLabels } from '../../src/api/labels.ts';
import { designSpec, desiredFor, find, get, type Json } from './helpers.ts';
import type { KubeObject } from '../../src/hook/index.ts';

const containers = (children: KubeObject[], set = 'my-redis-master') =>
  get(find(children, 'StatefulSet', set), 'spec', 'template', 'spec', 'containers') as Json[];
const exporterOf = (children: KubeObject[]) => containers(children).find((c) => c['name'] === 'exporter');
const envOf = (c: Json) => Object.fromEntries((c['env'] as Json[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));

test('by default every pod runs the exporter beside Redis, as the operator user, on port metrics', () => {
  const children = desiredFor();
  for (const set of ['my-redis-master', 'my-redis-replica']) {
    assert.deepEqual(
      containers(children, set).map((c) => c['name']),
      ['redis', 'exporter'],
      set,
    );
  }
  const c = exporterOf(children)!;
  assert.equal(c['image'], 'oliver006/redis_exporter:v1.45.0');
  assert.equal(c['command'], undefined, "the image's own entrypoint runs");
  assert.deepEqual(envOf(c), {
    REDIS_ADDR: 'redis://127.0.0.1:6379',
    REDIS_USER: 'redis-operator',
    REDIS_PASSWORD: { secretKeyRef: { name: 'my-redis-operator', key: 'password' } },
    REDIS_EXPORTER_WEB_LISTEN_ADDRESS: ':9121',
  });
  assert.deepEqual(c['ports'], [{ name: 'metrics', containerPort: 9121, protocol: 'TCP' }]);
  assert.equal(c['readinessProbe'], undefined, 'the exporter never makes a Redis pod NotReady');
  assert.equal(c['startupProbe'], undefined);
  assert.deepEqual(get(c, 'livenessProbe', 'httpGet'), { path: '/health', port: 'metrics', scheme: 'HTTP' });
  assert.deepEqual(c['resources'], { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } });
  assert.equal(get(c, 'securityContext', 'readOnlyRootFilesystem'), true);
  assert.equal(get(c, 'securityContext', 'runAsNonRoot'), true);
});

test('with spec.tls the exporter speaks TLS to its own pod (loopback: the certificate names no 127.0.0.1)', () => {
  const c = exporterOf(desiredFor({ ...designSpec(), tls: { secretName: 'redis-tls' } }))!;
  const env = envOf(c);
  assert.equal(env['REDIS_ADDR'], 'rediss://127.0.0.1:6379');
  assert.equal(env['REDIS_EXPORTER_SKIP_TLS_VERIFICATION'], 'true');
});

test('image, pull policy and resources come from spec.monitoring.exporter', () => {
  const c = exporterOf(
    desiredFor({
      ...designSpec(),
      monitoring: { exporter: { image: 'registry.example.com/redis_exporter:v1.62.0', imagePullPolicy: 'Always', resources: { limits: { cpu: '50m' } } } },
    }),
  )!;
  assert.equal(c['image'], 'registry.example.com/redis_exporter:v1.62.0');
  assert.equal(c['imagePullPolicy'], 'Always');
  assert.deepEqual(c['resources'], { limits: { cpu: '50m' } });
});

// The real kube-apiserver accepting this Service is children.test.ts's (its design variant).
test('the metrics Service is headless over every pod, ready or not, with scrape annotations', () => {
  const children = desiredFor();
  const svc = find(children, 'Service', 'my-redis-metrics');
  assert.deepEqual(svc.metadata.annotations, { 'prometheus.io/path': '/metrics', 'prometheus.io/port': '9121', 'prometheus.io/scrape': 'true' });
  assert.deepEqual(get(svc, 'spec'), {
    clusterIP: 'None',
    publishNotReadyAddresses: true,
    selector: podSelectorLabels('my-redis'),
    ports: [{ name: 'metrics', port: 9121, targetPort: 'metrics', protocol: 'TCP' }],
  });
});

test('turned off, there is no exporter and no metrics Service (so Metacontroller removes them)', async (t) => {
  for (const [label, monitoring] of [
    ['monitoring.enabled: false', { enabled: false }],
    ['monitoring.exporter.enabled: false', { exporter: { enabled: false } }],
  ] as const) {
    await t.test(label, () => {
      const children = desiredFor({ ...designSpec(), monitoring });
      assert.equal(exporterOf(children), undefined);
      assert.equal(
        children.some((c) => c.metadata.name === 'my-redis-metrics'),
        false,
      );
    });
  }
});
