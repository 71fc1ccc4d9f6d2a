// System test (issue 10, TLS): a Redis created with spec.tls naming a Secret in cert-manager's
// layout (certificates made with openssl). Plaintext gets no answer; a planned switchover and a
// crash of the master's redis-server under SET + WAIT 1 traffic over TLS lose nothing; a renewed
// certificate in the Secret is served by every pod without a restart (the node agent rewrites the
// mounted files as the kubelet does; the sidecar has each node load them). On the real control
// plane, the Certificate the hook returns for spec.tls.certManager is checked against
// cert-manager's own CRD (from its Go module) with strict field validation.
// Network: 198.18.69.x / 198.19.69.x (127.0.69.x on the stand-in).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { SWITCHOVER_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION } from '../../src/api/labels.ts';
import { servedFingerprint } from '../../src/sidecar/redis/tls.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { desiredCertificate } from '../../src/hook/children/certificate.ts';
import { exampleManifest } from '../cluster/index.ts';
import { certificateCrd } from '../k8s/cert-manager.ts';
import { nodeClient } from '../support/cluster-views.ts';
import { issue, makeCa, type Issued } from '../support/tls-certs.ts';
import { allLinked, assertNothingLost, boot, BOUND, MasterWatch, NAME, NS, podIp, podNames, RUNNING_ROW, servicesRouted, Writer } from './support.ts';

const SUBNET = 69;
const NAMES = { dnsNames: [`*.${NAME}-headless.${NS}.svc`, `*.${NAME}-headless.${NS}.svc.cluster.local`] };

const tlsSecret = (cert: Issued) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  type: 'kubernetes.io/tls',
  metadata: { name: `${NAME}-tls`, namespace: NS },
  stringData: { 'tls.crt': cert['tls.crt'], 'tls.key': cert['tls.key'], 'ca.crt': cert['ca.crt'] },
});

test(
  'spec.tls: plaintext refused; switchover and crash under traffic over TLS lose nothing; a renewed certificate is loaded without a restart',
  { timeout: 600_000 },
  async (t) => {
    const ca = makeCa();
    const first = issue(ca, { ...NAMES, cn: 'first' });
    const c = await boot(t, { subnet: SUBNET });
    await c.apply(tlsSecret(first));
    await c.apply(exampleManifest().replace('spec:\n', `spec:\n  tls:\n    secretName: ${NAME}-tls\n`));
    await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, `the row "${RUNNING_ROW}"`);
    await c.waitFor(() => allLinked(c, 3) && servicesRouted(c), BOUND.allReady, 'three Ready pods over TLS, replicas linked, Services routed');
    const servedBy = async (ip: string) =>
      servedFingerprint({ host: ip, port: 6379 }, { ca: first['ca.crt'], checkServerIdentity: () => undefined }, undefined, 2000).catch(() => null);

    await t.test('plaintext gets no answer on any pod', async () => {
      for (const name of podNames(c)) {
        const plain = nodeClient(podIp(c, name)!, c.password(NAME));
        plain.on('error', () => {});
        await assert.rejects(
          plain.connect().then(() => plain.ping()),
          /./,
          `${name} answered in plaintext`,
        );
        plain.disconnect();
        assert.equal(await servedBy(podIp(c, name)!), first.fingerprint, `${name} serves the Secret's certificate`);
      }
    });

    await t.test('a planned switchover and a crash of the master under SET + WAIT 1 over TLS: nothing acknowledged lost', async () => {
      const masters = new MasterWatch(t, c);
      const writer = new Writer(c, 'tls').start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 300, 15_000, '300 acknowledged writes over TLS');
      const before = c.masterEndpoint(NAME)!;
      await c.apply({
        apiVersion: 'redis.example.com/v1',
        kind: 'Redis',
        metadata: { name: NAME, namespace: NS, annotations: { [SWITCHOVER_ANNOTATION]: 'any' } },
      });
      await c.waitFor(
        () => c.get('redises', NAME, NS)?.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION]?.startsWith('any: Done'),
        BOUND.failover,
        'the switchover Done',
      );
      const switched = await c.waitFor(
        () => {
          const ep = c.masterEndpoint(NAME);
          return ep && ep.pod !== before.pod ? ep : undefined;
        },
        BOUND.failover,
        'the master Service on the new master',
      );
      await c.waitFor(() => writer.ackedAfter(performance.now() - 1, switched.pod), BOUND.failover, 'writes on the switched-to master');
      await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'linked after the switchover');

      const t0 = performance.now();
      assert.ok(c.killPodProcess(NS, switched.pod, 'SIGKILL'), `SIGKILL to ${switched.pod}'s redis-server`);
      const promoted = await c.waitFor(
        () => {
          const ep = c.masterEndpoint(NAME);
          return ep && ep.pod !== switched.pod ? ep : undefined;
        },
        BOUND.failover,
        'a new master after the crash',
      );
      t.diagnostic(`crash over TLS -> ${promoted.pod} behind the master Service: ${Math.round(performance.now() - t0)} ms`);
      await c.waitFor(() => writer.ackedAfter(t0, promoted.pod), BOUND.failover, 'writes on the new master');
      await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'the crashed node back as a linked replica');
      await writer.stop();
      await assertNothingLost(t, c, writer, 3);
      assert.deepEqual(masters.violations, [], 'never two pods labelled master');
    });

    await t.test("spec.tls.certManager: the hook's Certificate is valid for cert-manager's real CRD (strict field validation)", async (st) => {
      if (c.backend !== 'real') return st.skip('the stand-in API server has no CRD schemas to validate against');
      const crd = certificateCrd();
      if ('why' in crd) return st.skip(crd.why);
      const kubectl = (c.local as { kubectl(args: string[], input?: string): Promise<string> }).kubectl;
      await kubectl(['apply', '-f', crd.path]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/certificates.cert-manager.io']);
      const spec = validateSpec(NAME, { tls: { certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } } } });
      assert.ok(spec.ok);
      const certificate = desiredCertificate({ name: NAME, namespace: NS, uid: 'u', spec: spec.spec })!;
      const dryRun = (obj: unknown) => kubectl(['create', '--dry-run=server', '--validate=strict', '-o', 'name', '-f', '-'], JSON.stringify(obj));
      assert.match(await dryRun(certificate), /certificate\.cert-manager\.io\/my-redis-tls/);
      // The check can fail: a field cert-manager does not know is refused.
      await assert.rejects(dryRun({ ...certificate, spec: { ...certificate.spec, bogus: true } }), /unknown field/);
    });

    await t.test('a renewed certificate in the Secret is served by every pod, with no restart', async () => {
      const renewed = issue(ca, { ...NAMES, cn: 'renewed' });
      const identity = () =>
        c
          .pods(NAME)
          .map(
            (p) =>
              `${p.metadata.name}/${p.metadata.uid}/${JSON.stringify((p as { status?: { containerStatuses?: unknown } }).status?.containerStatuses ? restarts(p) : 0)}`,
          );
      const before = identity();
      const t0 = performance.now();
      await c.apply(tlsSecret(renewed));
      await c.waitFor(
        async () => (await Promise.all(podNames(c).map((n) => servedBy(podIp(c, n)!)))).every((fp) => fp === renewed.fingerprint),
        90_000,
        'every pod serving the renewed certificate',
      );
      t.diagnostic(`Secret renewed -> every pod serves the new certificate: ${Math.round(performance.now() - t0)} ms`);
      assert.deepEqual(identity(), before, 'no pod replaced, no container restarted');
      assert.ok(allLinked(c, 3), 'replication links stayed up');
      await c.waitFor(() => c.events({ reason: 'TLSCertificateLoaded' }).length >= 3, 10_000, 'TLSCertificateLoaded per pod');
    });
  },
);

function restarts(p: object): number {
  const status = (p as { status?: { containerStatuses?: Array<{ restartCount?: number }> } }).status;
  return (status?.containerStatuses ?? []).reduce((n, s) => n + (s.restartCount ?? 0), 0);
}
