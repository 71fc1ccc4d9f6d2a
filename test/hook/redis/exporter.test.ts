// The exporter and metrics proxy containers and the <name>-metrics Service: on by default, the
// exporter logging in as its own read-only user on loopback only, the proxy alone on the metrics
// port, over TLS with spec.tls, never able to make a Redis pod NotReady, and gone (with their
// Service) when monitoring or the exporter is turned off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { podSelectorLabels } from '../../../src/api/labels.ts';
import { designSpec, desiredFor, find, get, type Json } from '../common/helpers.ts';
import type { KubeObject } from '../../../src/hook/index.ts';
import { DEFAULT_HOOK_OPTIONS } from '../../../src/hook/common/options.ts';

const containers = (children: KubeObject[], set = 'my-redis-master') =>
  get(find(children, 'StatefulSet', set), 'spec', 'template', 'spec', 'containers') as Json[];
const exporterOf = (children: KubeObject[]) => containers(children).find((c) => c['name'] === 'exporter');
const envOf = (c: Json) =>
  Object.fromEntries((c['env'] as Json[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));

test('by default every pod runs the exporter and its proxy beside Redis; only the proxy serves the metrics port', () => {
  const children = desiredFor();
  for (const set of ['my-redis-master', 'my-redis-replica']) {
    assert.deepEqual(
      containers(children, set).map((c) => c['name']),
      ['redis', 'exporter', 'metrics-proxy'],
      set,
    );
  }
  const c = exporterOf(children)!;
  assert.equal(c['image'], 'oliver006/redis_exporter:v1.45.0');
  assert.equal(c['command'], undefined, "the image's own entrypoint runs");
  assert.equal(c['ports'], undefined, 'the exporter listens on loopback only: no port of the pod is its');
  assert.equal(c['readinessProbe'], undefined, 'the exporter never makes a Redis pod NotReady');
  assert.equal(c['startupProbe'], undefined);
  assert.deepEqual(
    get(c, 'livenessProbe', 'httpGet'),
    { path: '/health', port: 9121, scheme: 'HTTP' },
    "through the proxy (the kubelet cannot reach loopback), by number: the port's name belongs to the proxy's container",
  );
  assert.deepEqual(c['resources'], { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } });
  assert.equal(get(c, 'securityContext', 'readOnlyRootFilesystem'), true);
  assert.equal(get(c, 'securityContext', 'runAsNonRoot'), true);
});

test("the exporter logs in as its own read-only user, never the operator's, and listens on loopback only", () => {
  const env = envOf(exporterOf(desiredFor())!);
  assert.deepEqual(env, {
    REDIS_ADDR: 'redis://127.0.0.1:6379',
    REDIS_USER: 'redis-exporter',
    REDIS_PASSWORD: { secretKeyRef: { name: 'my-redis-exporter', key: 'password' } },
    REDIS_EXPORTER_WEB_LISTEN_ADDRESS: '127.0.0.1:9122',
    REDIS_EXPORTER_DISABLE_SCRAPE_ENDPOINT: 'true',
    REDIS_EXPORTER_DISABLE_EXPORTING_KEY_VALUES: 'true',
    REDIS_EXPORTER_CONFIG_COMMAND: '-',
  });
  assert.doesNotMatch(
    JSON.stringify(env),
    /redis-operator|my-redis-operator/,
    "no trace of the operator's user or Secret",
  );
});

test('the metrics proxy: the operator image, the metrics port, fixed small resources, restricted', () => {
  const p = containers(desiredFor()).find((c) => c['name'] === 'metrics-proxy')!;
  assert.equal(p['image'], DEFAULT_HOOK_OPTIONS.operatorImage);
  assert.deepEqual(p['command'], [
    'node',
    '--lite-mode',
    '--max-old-space-size=16',
    '--max-semi-space-size=1',
    'dist/metrics-proxy/main.js',
  ]);
  assert.deepEqual(envOf(p), { LISTEN_PORT: '9121', UPSTREAM_PORT: '9122' });
  assert.deepEqual(p['ports'], [{ name: 'metrics', containerPort: 9121, protocol: 'TCP' }]);
  assert.deepEqual(p['resources'], { requests: { cpu: '5m', memory: '32Mi' }, limits: { memory: '96Mi' } });
  assert.equal(p['readinessProbe'], undefined, 'never makes a Redis pod NotReady');
  assert.deepEqual(get(p, 'livenessProbe', 'tcpSocket'), { port: 'metrics' });
  assert.deepEqual(p['securityContext'], {
    runAsNonRoot: true,
    runAsUser: 999,
    runAsGroup: 999,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
});

test("Redis starts with the exporter's user when the exporter is on (its Secret optional: Redis never waits for it)", async (t) => {
  const redisEnv = (children: KubeObject[]) => envOf(containers(children).find((c) => c['name'] === 'redis')!);
  await t.test('on', () => {
    assert.deepEqual(redisEnv(desiredFor())['EXPORTER_PASSWORD'], {
      secretKeyRef: { name: 'my-redis-exporter', key: 'password', optional: true },
    });
  });
  await t.test('off', () => {
    assert.equal(
      redisEnv(desiredFor({ ...designSpec(), monitoring: { exporter: { enabled: false } } }))['EXPORTER_PASSWORD'],
      undefined,
    );
  });
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
      monitoring: {
        exporter: {
          image: 'registry.example.com/redis_exporter:v1.62.0',
          imagePullPolicy: 'Always',
          resources: { limits: { cpu: '50m' } },
        },
      },
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
  assert.deepEqual(svc.metadata.annotations, {
    'prometheus.io/path': '/metrics',
    'prometheus.io/port': '9121',
    'prometheus.io/scrape': 'true',
  });
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
      assert.deepEqual(
        containers(children).map((c) => c['name']),
        ['redis'],
      );
      assert.equal(
        children.some((c) => c.metadata.name === 'my-redis-metrics'),
        false,
      );
    });
  }
});
