// The plugin's adapter against an HTTP stand-in for the API server on 127.0.0.1: that the Lease
// read carries the server's Date header through client-node (the clock the Lease check uses).
// The stand-in answers only the two operator reads (a Lease list, no Deployment); it models no
// authentication, watch or other resource.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '../../src/plugin/kube.ts';

const SERVER_DATE = 'Sun, 01 Mar 2026 12:00:00 GMT';

test("operator(): the Leases with the API server's Date, no Deployment", async (t) => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('Date', SERVER_DATE);
    res.setHeader('Content-Type', 'application/json');
    if (req.url?.startsWith('/apis/coordination.k8s.io/v1/namespaces/redis-operator/leases')) {
      res.end(
        JSON.stringify({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'LeaseList',
          metadata: {},
          items: [
            {
              metadata: { name: 'redis-operator-sidecar' },
              spec: { holderIdentity: 'a', renewTime: '2026-03-01T11:59:59.000000Z', leaseDurationSeconds: 3 },
            },
          ],
        }),
      );
      return;
    }
    res.statusCode = 404;
    res.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: 'not found',
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const dir = await mkdtemp(join(tmpdir(), 'kubectl-redis-kube-'));
  const kubeconfig = join(dir, 'config');
  // Plain http: client-node allows it only with insecure-skip-tls-verify.
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: {
            server: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
            'insecure-skip-tls-verify': true,
          },
        },
      ],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  const o = await connect({ kubeconfig }).operator();
  assert.equal(o.serverDate, SERVER_DATE);
  assert.equal(o.deployment, null, 'a 404 Deployment: not checked');
  assert.deepEqual(
    o.leases?.map((l) => l.metadata?.name),
    ['redis-operator-sidecar'],
  );
  assert.ok(seen.some((s) => s.startsWith('GET /apis/apps/v1/namespaces/redis-operator/deployments/redis-operator')));
});
