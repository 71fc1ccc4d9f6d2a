// System test (TLS and rotation): a Redis created with spec.tls naming a Secret in
// cert-manager's layout (certificates made with openssl). Plaintext gets no answer; a planned
// switchover and a crash of the master's redis-server under SET + WAIT 1 traffic over TLS lose
// nothing; the default user's password Secret changes under writes: both passwords work for the
// grace period, then only the new one, and no probe fails (every pod stays Ready), nothing
// restarts, nothing is lost (before the operator had a user of its own, the probes read the old
// password from their env and every pod went NotReady); a renewed certificate in the Secret is
// served by every pod without a restart (the kubelet rewrites the mounted files as it
// does; the sidecar has each node load them). On the real control
// plane, the Certificate the hook returns for spec.tls.certManager is checked against
// cert-manager's own CRD (from its Go module) with strict field validation. `kubectl redis cli`
// sets and gets a key over TLS.
// Network: 198.18.69.x / 198.19.69.x.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { performance } from 'node:perf_hooks';
import {
  PASSWORD_GRACE_ANNOTATION,
  SWITCHOVER_ANNOTATION,
  SWITCHOVER_STATUS_ANNOTATION,
} from '../../src/api/labels.ts';
import { servedFingerprint } from '../../src/sidecar/adapters/redis/tls.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { desiredCertificate } from '../../src/hook/redis/children/certificate.ts';
import { isPodReady } from '../support/kubectl-tables.ts';
import { certificateCrd } from '../k8s/cert-manager.ts';
import { nodeClient } from '../support/cluster-views.ts';
import { replyAs } from '../support/redis-keys.ts';
import { issue, makeCa, type Issued } from '../support/tls-certs.ts';
import { PLUGIN, run } from './plugin-run.ts';
import {
  allLinked,
  assertNothingLost,
  boot,
  BOUND,
  MasterWatch,
  NAME,
  NS,
  podIp,
  podNames,
  RUNNING_ROW,
  servicesRouted,
  sleep,
  Writer,
  exampleManifest,
} from './support.ts';

const SUBNET = 69;
const GRACE_SECONDS = 6;
const NAMES = { dnsNames: [`*.${NAME}-headless.${NS}.svc`, `*.${NAME}-headless.${NS}.svc.cluster.local`] };

const tlsSecret = (cert: Issued) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  type: 'kubernetes.io/tls',
  metadata: { name: `${NAME}-tls`, namespace: NS },
  stringData: { 'tls.crt': cert['tls.crt'], 'tls.key': cert['tls.key'], 'ca.crt': cert['ca.crt'] },
});

test(
  'spec.tls: plaintext refused; switchover, crash and a password rotation under traffic over TLS lose nothing and fail no probe; a renewed certificate is loaded without a restart',
  { timeout: 600_000 },
  async (t) => {
    const ca = makeCa();
    const first = issue(ca, { ...NAMES, cn: 'first' });
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await c.apply(tlsSecret(first));
    await c.apply(exampleManifest().replace('spec:\n', `spec:\n  tls:\n    secretName: ${NAME}-tls\n`));
    await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, `the row "${RUNNING_ROW}"`);
    await c.waitFor(
      () => allLinked(c, 3) && servicesRouted(c),
      BOUND.allReady,
      'three Ready pods over TLS, replicas linked, Services routed',
    );
    // A few tries with a generous bound: on a loaded machine one handshake has taken over 2 s.
    const servedBy = async (ip: string) => {
      for (let i = 0; i < 3; i++) {
        const got = await servedFingerprint(
          { host: ip, port: 6379 },
          { ca: first['ca.crt'], checkServerIdentity: () => undefined },
          undefined,
          5000,
        ).catch(() => null);
        if (got !== null) return got;
      }
      return null;
    };

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

    await t.test('kubectl redis cli: set then get over TLS on the master, as the operator user', async () => {
      const env = { KUBECONFIG: c.kubeconfig, PATH: `${c.controlPlane.binDir}:${process.env['PATH'] ?? ''}` };
      const cli = (...args: string[]) => run(PLUGIN, ['cli', NAME, '-n', NS, '--', ...args], env);
      const set = await cli('set', 'cli-key', 'over tls');
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.stdout, 'OK\n');
      assert.equal((await cli('get', 'cli-key')).stdout, 'over tls\n');
      assert.equal((await cli('acl', 'whoami')).stdout, 'redis-operator\n');
    });

    await t.test(
      'a planned switchover and a crash of the master under SET + WAIT 1 over TLS: nothing acknowledged lost',
      async () => {
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
          () =>
            c.get('redises', NAME, NS)?.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION]?.startsWith('any: Done'),
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
        await c.waitFor(
          () => writer.ackedAfter(performance.now() - 1, switched.pod),
          BOUND.failover,
          'writes on the switched-to master',
        );
        await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'linked after the switchover');

        const t0 = performance.now();
        assert.ok(await c.killPodProcess(NS, switched.pod, 'SIGKILL'), `SIGKILL to ${switched.pod}'s redis-server`);
        const promoted = await c.waitFor(
          () => {
            const ep = c.masterEndpoint(NAME);
            return ep && ep.pod !== switched.pod ? ep : undefined;
          },
          BOUND.failover,
          'a new master after the crash',
        );
        t.diagnostic(
          `crash over TLS -> ${promoted.pod} behind the master Service: ${Math.round(performance.now() - t0)} ms`,
        );
        await c.waitFor(() => writer.ackedAfter(t0, promoted.pod), BOUND.failover, 'writes on the new master');
        await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'the crashed node back as a linked replica');
        await writer.stop();
        await assertNothingLost(t, c, writer, 3);
        assert.deepEqual(masters.violations, [], 'never two pods labelled master');
      },
    );

    await t.test(
      'a password rotation under writes over TLS: both passwords for the grace period, then only the new one; no failed probe, no restart, nothing lost',
      async () => {
        await c.apply({
          apiVersion: 'redis.example.com/v1',
          kind: 'Redis',
          metadata: { name: NAME, namespace: NS },
          spec: { passwordGracePeriodSeconds: GRACE_SECONDS },
        });
        const pods = () => podNames(c).map((n) => ({ name: n, ip: podIp(c, n)! }));
        const identity = () =>
          Object.fromEntries(
            c.pods(NAME).map((p) => [p.metadata.name, { uid: p.metadata.uid, restarts: restarts(p) }]),
          );
        const before = identity();
        const master = c.masterEndpoint(NAME)!.pod;
        // Every pod must stay Ready: a readiness probe that failed twice would show here within 2 s.
        const notReady: string[] = [];
        const timer = setInterval(() => {
          for (const p of c.pods(NAME))
            if (!isPodReady(p)) notReady.push(`${p.metadata.name} at ${new Date().toISOString()}`);
        }, 100);
        t.after(() => clearInterval(timer));
        const writer = new Writer(c, 'rot').start();
        t.after(() => writer.stop());
        await c.waitFor(() => writer.acked.length > 50, 20_000, 'writes acknowledged');
        const OLD = c.password(NAME)!;
        const NEW = 'a-new-password-from-the-platform-team';
        await c.apply({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `${NAME}-auth`, namespace: NS },
          stringData: { password: NEW },
        });
        const changedAt = performance.now();
        await c.waitFor(
          async () => (await Promise.all(pods().map((p) => pingWith(p.ip, NEW, ca.ca)))).every((r) => r === 'PONG'),
          30_000,
          'the new password on every pod',
        );
        t.diagnostic(
          `Secret changed -> the new password works on every pod: ${Math.round(performance.now() - changedAt)} ms`,
        );
        assert.deepEqual(
          await Promise.all(pods().map((p) => pingWith(p.ip, OLD, ca.ca))),
          ['PONG', 'PONG', 'PONG'],
          'the old password still works during the grace period',
        );
        assert.match(
          c.get('redises', NAME, NS)?.metadata.annotations?.[PASSWORD_GRACE_ANNOTATION] ?? '',
          /"default":/,
          'the grace period is recorded on the Redis',
        );
        await c.waitFor(
          async () =>
            (
              await Promise.all(
                pods().map(async (p) => `${await pingWith(p.ip, OLD, ca.ca)}/${await pingWith(p.ip, NEW, ca.ca)}`),
              )
            ).every((r) => r === 'WRONGPASS/PONG'),
          GRACE_SECONDS * 1000 + 30_000,
          'only the new password on every pod after the grace period',
        );
        t.diagnostic(
          `Secret changed -> the old password refused everywhere: ${Math.round(performance.now() - changedAt)} ms (grace ${GRACE_SECONDS} s)`,
        );
        await sleep(2500);
        clearInterval(timer);
        await writer.stop();
        assert.deepEqual(notReady, [], 'no pod was ever NotReady: no probe failed');
        assert.deepEqual(identity(), before, 'no pod was replaced and no container restarted');
        assert.ok(allLinked(c, 3), 'every replica still linked');
        assert.equal(c.masterEndpoint(NAME)?.pod, master, 'the master never changed');
        await c.waitFor(
          () => c.events({ reason: 'PasswordGraceEnded' }).length > 0,
          10_000,
          'the PasswordGraceEnded Event',
        );
        assert.equal(c.events({ reason: 'PasswordGraceStarted' }).length, 1);
        await assertNothingLost(t, c, writer, 3);
      },
    );

    await t.test(
      "spec.tls.certManager: the hook's Certificate is valid for cert-manager's real CRD (strict field validation)",
      async (st) => {
        const crd = certificateCrd();
        if ('why' in crd) return st.skip(crd.why);
        const kubectl = c.kubectl;
        await kubectl(['apply', '-f', crd.path]);
        await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/certificates.cert-manager.io']);
        const spec = validateSpec(NAME, {
          tls: { certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } } },
        });
        assert.ok(spec.ok);
        const certificate = desiredCertificate({
          name: NAME,
          namespace: NS,
          uid: 'u',
          spec: spec.spec,
          operatorImage: 'redis-operator:0.1.0',
          operatorNamespace: 'redis-operator',
        })!;
        const dryRun = (obj: unknown) =>
          kubectl(['create', '--dry-run=server', '--validate=strict', '-o', 'name', '-f', '-'], JSON.stringify(obj));
        assert.match(await dryRun(certificate), /certificate\.cert-manager\.io\/my-redis-tls/);
        // The check can fail: a field cert-manager does not know is refused.
        await assert.rejects(dryRun({ ...certificate, spec: { ...certificate.spec, bogus: true } }), /unknown field/);
      },
    );

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
        async () =>
          (await Promise.all(podNames(c).map((n) => servedBy(podIp(c, n)!)))).every((fp) => fp === renewed.fingerprint),
        90_000,
        'every pod serving the renewed certificate',
      );
      t.diagnostic(`Secret renewed -> every pod serves the new certificate: ${Math.round(performance.now() - t0)} ms`);
      assert.deepEqual(identity(), before, 'no pod replaced, no container restarted');
      assert.ok(allLinked(c, 3), 'replication links stayed up');
      await c.waitFor(
        () => c.events({ reason: 'TLSCertificateLoaded' }).length >= 3,
        10_000,
        'TLSCertificateLoaded per pod',
      );
    });
  },
);

/** PONG, or the first word of the refusal, for `password` as the default user on the pod at ip (over TLS). */
const pingWith = (ip: string, password: string, ca: string) =>
  replyAs(nodeClient(ip, undefined, { ca, checkServerIdentity: () => undefined }), [password], ['PING']);

function restarts(p: object): number {
  const status = (p as { status?: { containerStatuses?: Array<{ restartCount?: number }> } }).status;
  return (status?.containerStatuses ?? []).reduce((n, s) => n + (s.restartCount ?? 0), 0);
}
