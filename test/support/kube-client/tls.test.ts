// httpClient over TLS with a client certificate, against a REAL kube-apiserver
// (test/k8s/api-server.ts): the control plane's CA and its admin client certificate and key are
// copied next to a kubeconfig FILE that names them by relative paths (resolved from the file's
// directory, not the process's), and the client reaches the API server directly with it.
// Requests and the informer's watch (client-node's Watch, a TLS agent of its own) both have to
// carry the certificate: the API server answers an anonymous request 403. A CA that did not sign
// the server's certificate must fail the handshake.
// Needs the openssl binary, as the control plane's PKI does (skipped without it).
// Network: etcd and kube-apiserver on 127.0.0.1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../k8s/api-server.ts';
import { createPki } from '../../k8s/pki.ts';
import { KubeApiError } from './objects.ts';
import { httpClient } from './index.ts';
import { until } from '../until.ts';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A kubeconfig in `dir` naming its CA, certificate and key (unless `anonymous`) by paths relative to `dir`. */
function writeKubeconfig(dir: string, file: string, server: string, ca: string, anonymous = false): string {
  const kubeconfig = path.join(dir, file);
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{ name: tls, cluster: { server: "${server}", certificate-authority: ${ca} } }]`,
      anonymous
        ? 'users: [{ name: admin, user: {} }]'
        : 'users: [{ name: admin, user: { client-certificate: certs/admin.crt, client-key: certs/admin.key } }]',
      'contexts: [{ name: tls, context: { cluster: tls, user: admin } }]',
      'current-context: tls',
    ].join('\n'),
  );
  return kubeconfig;
}

describe(
  'httpClient over TLS with a client certificate (kubeconfig file with relative paths)',
  { skip: !hasOpenssl() && 'openssl is not installed' },
  () => {
    let api: ApiServer;
    let dir: string;

    before(async () => {
      api = await startApiServer();
      dir = mkdtempSync(path.join(os.tmpdir(), 'kube-client-tls-'));
      // The files the admin kubeconfig names, copied: nothing here points into the control plane's directory.
      const admin = new KubeConfig();
      admin.loadFromFile(api.controlPlane.adminKubeconfig);
      const caFile = admin.getCurrentCluster()?.caFile;
      const { certFile, keyFile } = admin.getCurrentUser() ?? {};
      assert.ok(caFile && certFile && keyFile, 'the admin kubeconfig names its CA, certificate and key by file');
      const certs = path.join(dir, 'certs');
      mkdirSync(certs);
      copyFileSync(caFile, path.join(certs, 'ca.crt'));
      copyFileSync(certFile, path.join(certs, 'admin.crt'));
      copyFileSync(keyFile, path.join(certs, 'admin.key'));
    });
    after(async () => {
      await api?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('requests and the informer watch authenticate with the certificate', async () => {
      const client = httpClient(writeKubeconfig(dir, 'kubeconfig', api.controlPlane.server, 'certs/ca.crt'));
      try {
        // Who the API server took us for: the certificate's subject, not system:anonymous.
        const reviews = await client.resource('authentication.k8s.io/v1', 'selfsubjectreviews');
        const review = await client.create(reviews, {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'SelfSubjectReview',
        });
        const user = (review['status'] as { userInfo: { username: string; groups: string[] } }).userInfo;
        assert.equal(user.username, 'admin');
        assert.ok(user.groups.includes('system:masters'), user.groups.join());

        const configmaps = await client.resource('v1', 'configmaps');
        await client.inform(configmaps);
        await client.create(configmaps, { metadata: { name: 'over-tls', namespace: 'default' }, data: { a: '1' } });
        // Written by another client: only the watch can bring it.
        await api.store.create('configmaps', {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'from-elsewhere', namespace: 'default' },
        });
        await until('the watch over TLS to deliver', () => client.get(configmaps, 'default', 'from-elsewhere'), 5000);
        assert.deepEqual(client.get(configmaps, 'default', 'over-tls')?.['data'], { a: '1' });
      } finally {
        await client.close();
      }
    });

    test('without the certificate the same server takes the client for system:anonymous: 403', async () => {
      const client = httpClient(
        writeKubeconfig(dir, 'anonymous.kubeconfig', api.controlPlane.server, 'certs/ca.crt', true),
      );
      try {
        const error = await client.resource('v1', 'configmaps').then(
          () => assert.fail('anonymous discovery succeeded'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof KubeApiError, String(error));
        assert.equal(error.code, 403);
        assert.match(error.message, /system:anonymous/);
      } finally {
        await client.close();
      }
    });

    test('a CA that did not sign the server certificate fails the handshake (a transport error, no HTTP answer)', async () => {
      copyFileSync(createPki(path.join(dir, 'other-pki')).ca.cert, path.join(dir, 'certs', 'other-ca.crt'));
      const client = httpClient(
        writeKubeconfig(dir, 'wrong-ca.kubeconfig', api.controlPlane.server, 'certs/other-ca.crt'),
      );
      try {
        await assert.rejects(client.resource('v1', 'configmaps'), (error: unknown) => {
          assert.ok(error instanceof Error && !(error instanceof KubeApiError), String(error));
          assert.match(error.message, /certificate/i);
          return true;
        });
      } finally {
        await client.close();
      }
    });
  },
);
