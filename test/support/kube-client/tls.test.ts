// httpClient over TLS with a client certificate, as against a real kube-apiserver: a TLS
// terminator on 127.0.0.1 (our own CA, a serving certificate for IP 127.0.0.1, client
// certificates required) in front of the kube-api stand-in, and a kubeconfig FILE naming the CA,
// certificate and key by relative paths. Requests and the informer's watch both go through it.
// Needs the openssl binary (skipped without it). Network: 127.0.0.1 only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { startKubeApi } from '../kube-api/index.ts';
import { httpClient } from './index.ts';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** CA, server (IP SAN 127.0.0.1) and client certificates in `dir`. */
function makePki(dir: string): void {
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const key = (name: string) => run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`]);
  key('ca');
  run(['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=test-ca', '-days', '1', '-out', 'ca.crt']);
  writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  writeFileSync(path.join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, cn] of [
    ['server', 'kube-apiserver'],
    ['client', 'metacontroller'],
  ] as const) {
    key(name);
    run(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`]);
    run([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ]);
  }
}

test('httpClient over TLS with a client certificate (kubeconfig file with relative paths)', { skip: !hasOpenssl() && 'openssl is not installed' }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kube-client-tls-'));
  const api = await startKubeApi();
  const read = (f: string) => readFileSync(path.join(dir, f));
  let verifiedClients = 0;
  makePki(dir);
  const terminator = tls.createServer(
    { key: read('server.key'), cert: read('server.crt'), ca: read('ca.crt'), requestCert: true, rejectUnauthorized: true },
    (socket) => {
      if (socket.authorized) verifiedClients += 1;
      const upstream = net.connect(api.port, '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    },
  );
  await new Promise<void>((resolve) => terminator.listen(0, '127.0.0.1', resolve));
  const port = (terminator.address() as net.AddressInfo).port;
  writeFileSync(
    path.join(dir, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: tls, cluster: { server: "https://127.0.0.1:' + port + '", certificate-authority: ca.crt } }]',
      'users: [{ name: mc, user: { client-certificate: client.crt, client-key: client.key } }]',
      'contexts: [{ name: tls, context: { cluster: tls, user: mc } }]',
      'current-context: tls',
    ].join('\n'),
  );
  const client = httpClient(path.join(dir, 'kubeconfig'));
  try {
    const configmaps = await client.resource('v1', 'configmaps');
    await client.inform(configmaps);
    await client.create(configmaps, { metadata: { name: 'over-tls', namespace: 'default' }, data: { a: '1' } });
    api.store.create('configmaps', { metadata: { name: 'from-the-store', namespace: 'default' } });
    const end = Date.now() + 5000;
    while (client.get(configmaps, 'default', 'from-the-store') === undefined) {
      if (Date.now() > end) assert.fail('the watch over TLS did not deliver');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(client.get(configmaps, 'default', 'over-tls')?.['data'] !== undefined, true);
    assert.ok(verifiedClients >= 2, 'requests and the watch presented the client certificate');
    assert.ok(
      api.requests.some((r) => r.watch),
      'the watch went through the TLS terminator',
    );
  } finally {
    await client.close();
    terminator.close();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
