// The children the hook returns for a valid spec: accepted by the real kube-apiserver, labelled
// for Metacontroller's generated selector, never carrying the role label on pod templates, secure
// by default.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validateSpec } from '../../../src/api/validate.ts';
import { CONTROLLER_UID_LABEL, ROLE_LABEL, podSelectorLabels } from '../../../src/api/labels.ts';
import { CONFIG_HASH_ANNOTATION } from '../../../src/hook/common/pod-template.ts';
import { sync, type KubeObject } from '../../../src/hook/index.ts';
import { dryRunMissing, rewrites, startDryRunServer, type DryRunServer } from '../../k8s/dry-run.ts';
import {
  UID,
  designSpec,
  desiredFor,
  find,
  get,
  healthyPods,
  pod,
  redis,
  request,
  type Json,
} from '../common/helpers.ts';

const variants: Array<[string, Json]> = [
  ['the design', designSpec()],
  [
    'no persistence, no replicas',
    { ...designSpec(), replicas: 0, persistence: { enableRdb: false, enableAof: false } },
  ],
  [
    'everything set',
    {
      version: '7.2.4',
      image: 'registry.example.com/redis:7.2.4-custom',
      imagePullPolicy: 'IfNotPresent',
      imagePullSecrets: [{ name: 'regcred' }],
      replicas: 3,
      persistence: {
        enableRdb: true,
        rdbSchedule: '@hourly',
        enableAof: false,
        size: '20Gi',
        storageClassName: 'fast',
        whenDeleted: 'Delete',
      },
      resources: { limits: { memory: '1Gi' } },
      auth: { secretName: 'redis-pass', key: 'pw' },
      failover: { minReplicasToWrite: 2, minReplicasMaxLagSeconds: 10 },
      config: { 'maxmemory-policy': 'allkeys-lru', 'tcp-keepalive': '60' },
      nodeSelector: { zone: 'a', disk: 'ssd' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'redis', effect: 'NoSchedule' }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] }],
          },
        },
      },
      priorityClassName: 'high',
      podAnnotations: { 'prometheus.io/scrape': 'true' },
    },
  ],
  ['pre-release version', { ...designSpec(), version: '7.2-rc.1' }],
];

for (const [label, spec] of variants) {
  test(`children for ${label}: the config, the Services, both StatefulSets and the PDB`, () => {
    assert.deepEqual(
      desiredFor(spec).map((c) => `${c.kind}/${c.metadata.name}`),
      [
        'ConfigMap/my-redis-config',
        'Service/my-redis-headless',
        'Service/my-redis-master',
        'Service/my-redis-replicas',
        'Service/my-redis-metrics',
        'StatefulSet/my-redis-master',
        'StatefulSet/my-redis-replica',
        'PodDisruptionBudget/my-redis-pdb',
      ],
    );
  });

  test(`children for ${label} carry controller-uid, namespace and app labels, never ownerReferences`, () => {
    for (const child of desiredFor(spec)) {
      const labels = child.metadata.labels ?? {};
      assert.equal(labels[CONTROLLER_UID_LABEL], UID, child.metadata.name);
      assert.equal(child.metadata.namespace, 'default');
      for (const key of ['name', 'instance', 'component', 'managed-by', 'part-of'])
        assert.ok(labels[`app.kubernetes.io/${key}`], key);
      assert.equal(child.metadata.ownerReferences, undefined);
      assert.equal(JSON.stringify(child).includes('"ownerReferences"'), false);
    }
  });

  test(`pod templates for ${label} never carry the role label`, () => {
    for (const set of desiredFor(spec).filter((c) => c.kind === 'StatefulSet')) {
      const labels = get(set, 'spec', 'template', 'metadata', 'labels') as Record<string, string>;
      assert.equal(ROLE_LABEL in labels, false);
      assert.equal(JSON.stringify(get(set, 'spec', 'template')).includes(ROLE_LABEL), false);
      assert.equal(JSON.stringify(get(set, 'spec', 'selector')).includes(ROLE_LABEL), false);
    }
  });
}

test('StatefulSets: sizes, headless service, parallel pods, retention policy, claims when persistent', () => {
  const children = desiredFor();
  const master = find(children, 'StatefulSet', 'my-redis-master');
  const replica = find(children, 'StatefulSet', 'my-redis-replica');
  assert.equal(get(master, 'spec', 'replicas'), 1);
  assert.equal(get(replica, 'spec', 'replicas'), 2);
  for (const set of [master, replica]) {
    assert.equal(get(set, 'spec', 'serviceName'), 'my-redis-headless');
    assert.equal(get(set, 'spec', 'podManagementPolicy'), 'Parallel');
    assert.deepEqual(get(set, 'spec', 'updateStrategy'), { type: 'OnDelete' });
    assert.deepEqual(get(set, 'spec', 'persistentVolumeClaimRetentionPolicy'), {
      whenDeleted: 'Retain',
      whenScaled: 'Retain',
    });
    assert.equal(get(set, 'spec', 'volumeClaimTemplates', 0, 'spec', 'resources', 'requests', 'storage'), '10Gi');
    // PVCs carry the pod selector labels so customize can select them.
    const claimLabels = get(set, 'spec', 'volumeClaimTemplates', 0, 'metadata', 'labels') as Record<string, string>;
    for (const [k, v] of Object.entries(podSelectorLabels('my-redis'))) assert.equal(claimLabels[k], v);
    const volumes = get(set, 'spec', 'template', 'spec', 'volumes') as Json[];
    assert.equal(
      volumes.some((v) => v['name'] === 'data'),
      false,
      'data comes from the claim template',
    );
    assert.equal(get(set, 'spec', 'template', 'spec', 'containers', 0, 'image'), 'redis:7.2');
  }
  assert.equal(get(master, 'spec', 'template', 'metadata', 'labels', 'app.kubernetes.io/component'), 'master-set');
  assert.equal(get(replica, 'spec', 'template', 'metadata', 'labels', 'app.kubernetes.io/component'), 'replica-set');
  assert.equal(get(master, 'spec', 'template', 'metadata', 'labels', 'app.kubernetes.io/version'), '7.2');
});

test('without persistence the data volume is an emptyDir and there are no claim templates', () => {
  const spec = { ...designSpec(), persistence: { enableRdb: false, enableAof: false } };
  for (const set of desiredFor(spec).filter((c) => c.kind === 'StatefulSet')) {
    assert.equal(get(set, 'spec', 'volumeClaimTemplates'), undefined);
    const volumes = get(set, 'spec', 'template', 'spec', 'volumes') as Json[];
    assert.deepEqual(
      volumes.find((v) => v['name'] === 'data'),
      { name: 'data', emptyDir: {} },
    );
  }
});

test('pods run non-root as the redis user with the restricted security profile', () => {
  const set = find(desiredFor(), 'StatefulSet', 'my-redis-master');
  const pod = get(set, 'spec', 'template', 'spec') as Json;
  assert.deepEqual(get(pod, 'securityContext'), {
    runAsNonRoot: true,
    runAsUser: 999,
    runAsGroup: 999,
    fsGroup: 999,
    fsGroupChangePolicy: 'OnRootMismatch',
    seccompProfile: { type: 'RuntimeDefault' },
  });
  const c = get(pod, 'containers', 0, 'securityContext') as Json;
  assert.equal(c['runAsNonRoot'], true);
  assert.equal(c['allowPrivilegeEscalation'], false);
  assert.equal(c['readOnlyRootFilesystem'], true);
  assert.deepEqual(c['capabilities'], { drop: ['ALL'] });
  assert.deepEqual(c['seccompProfile'], { type: 'RuntimeDefault' });
  assert.equal(pod['automountServiceAccountToken'], false);
});

test('env, command and probes follow the shared contract; the password never appears in the ConfigMap', () => {
  const children = desiredFor();
  const container = get(
    find(children, 'StatefulSet', 'my-redis-replica'),
    'spec',
    'template',
    'spec',
    'containers',
    0,
  ) as Json;
  const env = container['env'] as Json[];
  assert.deepEqual(
    env.map((e) => e['name']),
    [
      'POD_IP',
      'POD_NAME',
      'REDIS_PASSWORD',
      'OPERATOR_PASSWORD',
      'EXPORTER_PASSWORD',
      'REDIS_PASSWORD_SOURCE',
      'OPERATOR_PASSWORD_SOURCE',
    ],
  );
  // Where each password came from, for the start script's refusal of one it cannot write: names only.
  assert.deepEqual(env.slice(5), [
    { name: 'REDIS_PASSWORD_SOURCE', value: 'Secret my-redis-auth, key password' },
    { name: 'OPERATOR_PASSWORD_SOURCE', value: 'Secret my-redis-operator, key password' },
  ]);
  assert.equal(get(env[0], 'valueFrom', 'fieldRef', 'fieldPath'), 'status.podIP');
  assert.equal(get(env[1], 'valueFrom', 'fieldRef', 'fieldPath'), 'metadata.name');
  assert.deepEqual(get(env[2], 'valueFrom', 'secretKeyRef'), { name: 'my-redis-auth', key: 'password' });
  assert.deepEqual(
    get(env[3], 'valueFrom', 'secretKeyRef'),
    { name: 'my-redis-operator', key: 'password' },
    "the operator's own user",
  );
  assert.deepEqual(
    get(env[4], 'valueFrom', 'secretKeyRef'),
    { name: 'my-redis-exporter', key: 'password', optional: true },
    "the exporter's own user",
  );
  const command = (container['command'] as string[]).join(' ');
  assert.match(command, /exec redis-server \/etc\/redis\/redis\.conf - <<EOF/, 'config lines on stdin, after the file');
  assert.doesNotMatch(command, /--requirepass|--masterauth/, 'never a password option on the command line');
  const readiness = (get(container, 'readinessProbe', 'exec', 'command') as string[]).join(' ');
  assert.match(
    readiness,
    /REDISCLI_AUTH="\$OPERATOR_PASSWORD" redis-cli --user redis-operator -h "\$POD_IP"/,
    'probes never use the password clients rotate',
  );
  assert.match(readiness, /role:master/);
  assert.match(readiness, /master_link_status:up/);
  assert.ok(
    (get(container, 'livenessProbe', 'failureThreshold') as number) *
      (get(container, 'livenessProbe', 'periodSeconds') as number) >=
      60,
  );
  assert.ok(
    (get(container, 'startupProbe', 'failureThreshold') as number) *
      (get(container, 'startupProbe', 'periodSeconds') as number) >=
      300,
  );
  assert.equal(JSON.stringify(find(children, 'ConfigMap', 'my-redis-config')).includes('requirepass'), false);
});

test('spec.auth names the Secret and key the pods read', () => {
  const children = desiredFor({ ...designSpec(), auth: { secretName: 'corp-redis', key: 'token' } });
  const env = get(
    find(children, 'StatefulSet', 'my-redis-master'),
    'spec',
    'template',
    'spec',
    'containers',
    0,
    'env',
  ) as Json[];
  assert.deepEqual(get(env[2], 'valueFrom', 'secretKeyRef'), { name: 'corp-redis', key: 'token' });
});

test('scheduling fields and annotations are copied from the spec; the default affinity spreads pods over nodes', () => {
  const defaults = get(find(desiredFor(), 'StatefulSet', 'my-redis-master'), 'spec', 'template', 'spec') as Json;
  assert.deepEqual(
    get(
      defaults,
      'affinity',
      'podAntiAffinity',
      'preferredDuringSchedulingIgnoredDuringExecution',
      0,
      'podAffinityTerm',
    ),
    {
      labelSelector: { matchLabels: podSelectorLabels('my-redis') },
      topologyKey: 'kubernetes.io/hostname',
    },
  );
  const spec = (variants[2] as [string, Json])[1];
  const set = find(desiredFor(spec), 'StatefulSet', 'my-redis-replica');
  const pod = get(set, 'spec', 'template', 'spec') as Json;
  assert.deepEqual(pod['affinity'], spec['affinity']);
  assert.deepEqual(pod['nodeSelector'], { disk: 'ssd', zone: 'a' });
  assert.deepEqual(pod['tolerations'], spec['tolerations']);
  assert.equal(pod['priorityClassName'], 'high');
  assert.deepEqual(pod['imagePullSecrets'], [{ name: 'regcred' }]);
  assert.equal(get(pod, 'containers', 0, 'image'), 'registry.example.com/redis:7.2.4-custom');
  assert.equal(get(pod, 'containers', 0, 'imagePullPolicy'), 'IfNotPresent');
  assert.deepEqual(get(pod, 'containers', 0, 'resources'), { limits: { memory: '1Gi' } });
  assert.equal(get(set, 'spec', 'template', 'metadata', 'annotations', 'prometheus.io/scrape'), 'true');
  assert.equal(get(set, 'spec', 'volumeClaimTemplates', 0, 'spec', 'storageClassName'), 'fast');
  assert.deepEqual(get(set, 'spec', 'persistentVolumeClaimRetentionPolicy'), {
    whenDeleted: 'Delete',
    whenScaled: 'Retain',
  });
});

test('the config hash annotation changes exactly when the static part of redis.conf changes', () => {
  const hashOf = (spec: Json) =>
    get(
      find(desiredFor(spec), 'StatefulSet', 'my-redis-master'),
      'spec',
      'template',
      'metadata',
      'annotations',
      CONFIG_HASH_ANNOTATION,
    );
  const base = hashOf(designSpec());
  assert.match(String(base), /^[0-9a-f]{16}$/);
  assert.equal(hashOf(designSpec()), base);
  assert.notEqual(hashOf({ ...designSpec(), config: { 'io-threads': '4' } }), base);
  // Dynamic directives reach running nodes through the sidecar: the ConfigMap changes, the pods do not.
  const dynamic = { ...designSpec(), config: { 'maxmemory-policy': 'allkeys-lru', timeout: '60' } };
  assert.equal(hashOf(dynamic), base);
  const file = (spec: Json) =>
    String(get(find(desiredFor(spec), 'ConfigMap', 'my-redis-config'), 'data', 'redis.conf'));
  assert.notEqual(file(dynamic), file(designSpec()));
  assert.match(file(dynamic), /\nmaxmemory-policy allkeys-lru\ntimeout 60\n/);
  assert.notEqual(hashOf({ ...designSpec(), resources: { limits: { memory: '1Gi' } } }), base);
  // Scaling 2 -> 3 keeps min-replicas-to-write at 1: same file, no rolling restart.
  assert.equal(hashOf({ ...designSpec(), replicas: 3 }), base);
});

test('Services: headless over all pods, master and replicas by the role label the sidecar writes', () => {
  const children = desiredFor();
  const pods = podSelectorLabels('my-redis');
  const headless = find(children, 'Service', 'my-redis-headless');
  assert.equal(get(headless, 'spec', 'clusterIP'), 'None');
  assert.equal(get(headless, 'spec', 'publishNotReadyAddresses'), true);
  assert.deepEqual(get(headless, 'spec', 'selector'), pods);
  assert.deepEqual(get(find(children, 'Service', 'my-redis-master'), 'spec', 'selector'), {
    ...pods,
    [ROLE_LABEL]: 'master',
  });
  assert.deepEqual(get(find(children, 'Service', 'my-redis-replicas'), 'spec', 'selector'), {
    ...pods,
    [ROLE_LABEL]: 'replica',
  });
  for (const name of ['my-redis-headless', 'my-redis-master', 'my-redis-replicas']) {
    assert.deepEqual(get(find(children, 'Service', name), 'spec', 'ports'), [
      { name: 'redis', port: 6379, targetPort: 6379, protocol: 'TCP' },
    ]);
  }
});

test('PodDisruptionBudget allows one pod down and selects every pod', () => {
  const pdb = find(desiredFor(), 'PodDisruptionBudget', 'my-redis-pdb');
  assert.equal(get(pdb, 'spec', 'maxUnavailable'), 1);
  assert.deepEqual(get(pdb, 'spec', 'selector', 'matchLabels'), podSelectorLabels('my-redis'));
});

test('a pre-release version is the label and the image tag as written', () => {
  const set = find(desiredFor({ ...designSpec(), version: '7.2-rc.1' }), 'StatefulSet', 'my-redis-master');
  assert.equal(get(set, 'metadata', 'labels', 'app.kubernetes.io/version'), '7.2-rc.1');
  assert.equal(get(set, 'spec', 'template', 'spec', 'containers', 0, 'image'), 'redis:7.2-rc.1');
});

test('a version a label could not hold is refused by the schema, so it never reaches a label', async (t) => {
  for (const version of ['7.2-rc.', `7.2-${'a'.repeat(62)}`]) {
    await t.test(version, () => {
      const verdict = validateSpec('my-redis', { ...designSpec(), version });
      assert.equal(verdict.ok, false, version);
      if (!verdict.ok)
        assert.ok(
          verdict.problems.some((p) => p.field === 'spec.version'),
          JSON.stringify(verdict.problems),
        );
    });
  }
});

test('scaling down never removes the pod that is master: the replica set is held until the master moves', async (t) => {
  const cases: Array<{ name: string; replicas: number; pods: KubeObject[]; want: number }> = [
    { name: 'master on master-0: scale to 1 applies', replicas: 1, pods: healthyPods(), want: 1 },
    {
      name: 'master on replica-1: scale to 1 holds 2',
      replicas: 1,
      pods: [
        pod({ name: 'my-redis-master-0', role: 'replica', link: 'up', ip: '10.0.0.1' }),
        pod({ name: 'my-redis-replica-0', role: 'replica', link: 'up', ip: '10.0.0.2' }),
        pod({ name: 'my-redis-replica-1', role: 'master', ip: '10.0.0.3' }),
      ],
      want: 2,
    },
    {
      name: 'master on replica-2: scale to 0 holds 3',
      replicas: 0,
      pods: [pod({ name: 'my-redis-replica-2', role: 'master', ip: '10.0.0.3' })],
      want: 3,
    },
    {
      name: "a master label on another Redis's pod is ignored",
      replicas: 1,
      pods: [pod({ name: 'my-redis-replica-4', role: 'master', ip: '10.0.0.9', instance: 'other' })],
      want: 1,
    },
    {
      name: 'scale up is never held back',
      replicas: 3,
      pods: [pod({ name: 'my-redis-replica-0', role: 'master', ip: '10.0.0.2' })],
      want: 3,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const children = sync(
        request({ parent: redis({ ...designSpec(), replicas: c.replicas }), related: c.pods }),
      ).children;
      assert.equal(get(find(children, 'StatefulSet', 'my-redis-replica'), 'spec', 'replicas'), c.want, c.name);
      assert.equal(get(find(children, 'StatefulSet', 'my-redis-master'), 'spec', 'replicas'), 1, c.name);
    });
  }
});

test('empty scheduling maps and lists are left out, as the API server stores them (no diff on every sync)', () => {
  const set = find(
    desiredFor({ ...designSpec(), nodeSelector: {}, tolerations: [], imagePullSecrets: [] }),
    'StatefulSet',
    'my-redis-master',
  );
  const podSpec = get(set, 'spec', 'template', 'spec') as Json;
  for (const key of ['nodeSelector', 'tolerations', 'imagePullSecrets']) assert.equal(key in podSpec, false, key);
  const withValues = find(
    desiredFor({ ...designSpec(), nodeSelector: { zone: 'a' } }),
    'StatefulSet',
    'my-redis-master',
  );
  assert.deepEqual(get(withValues, 'spec', 'template', 'spec', 'nodeSelector'), { zone: 'a' });
});

test('spec.tls: the Secret mounted read-only for the group only, probes over TLS, and a Certificate only when cert-manager is asked', () => {
  const own = desiredFor({ ...designSpec(), tls: { secretName: 'corp-tls' } });
  for (const set of ['my-redis-master', 'my-redis-replica']) {
    const pod = get(find(own, 'StatefulSet', set), 'spec', 'template', 'spec') as Json;
    const volumes = pod['volumes'] as Json[];
    assert.deepEqual(
      volumes.find((v) => v['name'] === 'tls'),
      { name: 'tls', secret: { secretName: 'corp-tls', defaultMode: 0o440 } },
    );
    const c = (pod['containers'] as Json[])[0]!;
    assert.deepEqual(
      (c['volumeMounts'] as Json[]).find((m) => m['name'] === 'tls'),
      { name: 'tls', mountPath: '/tls', readOnly: true },
    );
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      assert.match(
        (get(c, probe, 'exec', 'command') as string[]).join(' '),
        /redis-cli --tls --cacert \/tls\/ca\.crt --user redis-operator/,
        probe,
      );
    }
  }
  assert.match(
    String(get(find(own, 'ConfigMap', 'my-redis-config'), 'data', 'redis.conf')),
    /^port 0\ntls-port 6379\n/m,
  );
  assert.equal(
    own.find((c) => c.kind === 'Certificate'),
    undefined,
    'a Secret of the user: no Certificate',
  );

  const managed = desiredFor({
    ...designSpec(),
    tls: { certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } } },
  });
  const cert = find(managed, 'Certificate', 'my-redis-tls');
  assert.equal(cert.apiVersion, 'cert-manager.io/v1');
  assert.deepEqual(get(cert, 'spec', 'issuerRef'), {
    name: 'corp-ca',
    kind: 'ClusterIssuer',
    group: 'cert-manager.io',
  });
  assert.equal(get(cert, 'spec', 'secretName'), 'my-redis-tls', 'the default Secret name, which the pods mount');
  assert.ok(
    (get(cert, 'spec', 'dnsNames') as string[]).includes('*.my-redis-headless.default.svc'),
    'the name the sidecar checks',
  );
  const managedVolumes = get(
    find(managed, 'StatefulSet', 'my-redis-master'),
    'spec',
    'template',
    'spec',
    'volumes',
  ) as Json[];
  assert.equal(
    get(
      managedVolumes.find((v) => v['name'] === 'tls'),
      'secret',
      'secretName',
    ),
    'my-redis-tls',
  );
  const plain = desiredFor();
  assert.equal(
    plain.some((c) => c.kind === 'Certificate' || JSON.stringify(c).includes('tls-port')),
    false,
    'no TLS unless asked',
  );
});

describe(
  'the real kube-apiserver accepts the children (dry-run create, strict field validation)',
  { skip: dryRunMissing() ?? false },
  () => {
    let server: DryRunServer;
    before(async () => (server = await startDryRunServer()));
    after(() => server?.close());

    for (const [label, spec] of variants)
      test(`children for ${label}`, async () => assert.deepEqual(await server.refusals(desiredFor(spec)), []));

    test('children with every optional child: a NetworkPolicy and the backup CronJob', async () => {
      const spec = {
        ...designSpec(),
        networkPolicy: {
          allowFrom: { app: 'shop' },
          monitoringFrom: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
              podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
            },
            { podSelector: { matchLabels: { app: 'prom' } } },
          ],
        },
        backup: { schedule: '0 */6 * * *', storage: { s3: { bucket: 'redis-backups', region: 'us-east-1' } } },
      };
      const children = desiredFor(spec);
      assert.equal(
        (get(find(children, 'NetworkPolicy', 'my-redis-ingress'), 'spec', 'ingress') as unknown[]).length,
        2,
        'with the metrics rule',
      );
      assert.ok(children.some((c) => c.kind === 'NetworkPolicy') && children.some((c) => c.kind === 'CronJob'));
      assert.deepEqual(await server.refusals(children), []);
    });

    test('children for a longest allowed name', async () => {
      const name = 'r'.repeat(40);
      assert.deepEqual(await server.refusals(sync(request({ parent: redis(designSpec(), { name }) })).children), []);
    });

    // Metacontroller's apply merges the hook's answer into the observed object and writes it when
    // they differ: a value the server stores otherwise than sent would be written on every sync.
    test('the server stores each child as the hook returned it: nothing dropped or rewritten', async (t) => {
      for (const [label, spec] of variants) {
        await t.test(label, async () => {
          for (const child of desiredFor(spec))
            assert.deepEqual(
              rewrites(child, (await server.dryRun(child)).object),
              [],
              `${child.kind}/${child.metadata.name}`,
            );
        });
      }
    });

    test(
      'a quantity the user writes in another form than the canonical one reaches the children canonical',
      {
        todo: 'the hook passes spec.resources through verbatim; the server stores "0.5Gi" as "512Mi", "0.5" as "500m", a number as a string',
      },
      async () => {
        const spec = {
          ...designSpec(),
          resources: { requests: { memory: '0.5Gi', cpu: '0.1' }, limits: { memory: 1073741824, cpu: '0.5' } },
        };
        const set = find(desiredFor(spec), 'StatefulSet', 'my-redis-master');
        assert.deepEqual(rewrites(set, (await server.dryRun(set)).object), []);
      },
    );

    // The server refuses a container whose request exceeds its limit: the hook refuses the spec
    // first, naming the field, so no child write can fail on it; at the limit, the server agrees.
    test('requests above the limits: the spec refused naming the field; at the limit, the children accepted', async () => {
      const over = {
        ...designSpec(),
        resources: { requests: { memory: '1Gi', cpu: '1' }, limits: { memory: '256Mi', cpu: '500m' } },
      };
      const verdict = validateSpec('my-redis', over);
      assert.equal(verdict.ok, false);
      assert.deepEqual(verdict.ok ? [] : verdict.problems.map((p) => p.field), [
        'spec.resources.requests.cpu',
        'spec.resources.requests.memory',
      ]);
      const at = {
        ...designSpec(),
        resources: { requests: { memory: '256Mi', cpu: '0.5' }, limits: { memory: '256Mi', cpu: '500m' } },
      };
      assert.equal(validateSpec('my-redis', at).ok, true);
      assert.deepEqual(await server.refusals(desiredFor(at)), []);
    });

    // Strict field validation is on, and a refusal names the object and quotes the server.
    test('the check bites: an unknown field, a template the selector misses', async () => {
      const set = structuredClone(find(desiredFor(), 'StatefulSet', 'my-redis-master'));
      (get(set, 'spec', 'template', 'spec', 'containers', 0) as Json)['imagePullPolicyy'] = 'Always';
      const wrong = structuredClone(find(desiredFor(), 'StatefulSet', 'my-redis-replica'));
      (get(wrong, 'spec', 'template', 'metadata', 'labels') as Json)['app.kubernetes.io/name'] = 'other';
      const [unknown, selector, ...rest] = await server.refusals([set, wrong]);
      assert.match(
        String(unknown),
        /^StatefulSet\/my-redis-master: .*unknown field "spec\.template\.spec\.containers\[0\]\.imagePullPolicyy"/,
      );
      assert.match(
        String(selector),
        /^StatefulSet\/my-redis-replica: .*spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/,
      );
      assert.deepEqual(rest, []);
    });
  },
);
