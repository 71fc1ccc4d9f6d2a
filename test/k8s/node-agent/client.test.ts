// The node agent's REST client, list+watch cache and log endpoint against small fake HTTPS
// servers on 127.0.0.1 (no control plane): kubeconfig credentials, 404 as an answer, watch
// resumption, relist after 410 Gone, and `kubectl logs` query semantics.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ApiError, KubeClient } from './api-client.ts';
import { selectLog, selfSignedCert, startLogServer, type Tls } from './log-server.ts';
import { Reflector, type EventType, type KubeObject } from './reflector.ts';

const silent = pino({ level: 'silent' });

function tmp(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'node-agent-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function fakeApi(tls: Tls, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ port: number; close(): Promise<void> }> {
  const server = https.createServer({ cert: tls.cert, key: tls.key }, handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function kubeconfig(dir: string, port: number): string {
  const file = path.join(dir, 'kubeconfig');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:' + port + '", certificate-authority: pki/kubelet.crt}}]',
      'users: [{name: u, user: {token: secret-token}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
      '',
    ].join('\n'),
  );
  return file;
}

const pod = (name: string, rv: number): KubeObject => ({ metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: String(rv) } });

describe('KubeClient', () => {
  test('sends the token, answers JSON, 404 as undefined from get(), other errors as ApiError', async (t) => {
    const dir = tmp(t);
    const tls = selfSignedCert(path.join(dir, 'pki'), ['127.0.0.1']);
    const seen: string[] = [];
    const api = await fakeApi(tls, (req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers['authorization']} ${req.headers['content-type'] ?? ''}`);
      if (req.url === '/missing') return void res.writeHead(404).end(JSON.stringify({ kind: 'Status', message: 'not found', reason: 'NotFound' }));
      if (req.url === '/conflict') return void res.writeHead(409).end(JSON.stringify({ kind: 'Status', message: 'uid mismatch', reason: 'Conflict' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
    });
    t.after(() => api.close());
    const client = new KubeClient(kubeconfig(dir, api.port));
    t.after(() => client.close());
    assert.deepEqual(await client.request('PATCH', '/x', { body: { a: 1 }, contentType: 'application/strategic-merge-patch+json' }), { ok: true });
    assert.equal(await client.get('/missing'), undefined);
    await assert.rejects(client.request('DELETE', '/conflict'), (err: unknown) => err instanceof ApiError && err.status === 409 && err.reason === 'Conflict');
    assert.deepEqual(seen[0], 'PATCH /x Bearer secret-token application/strategic-merge-patch+json');
  });

  test('refuses an API server that is not on loopback', (t) => {
    const dir = tmp(t);
    const file = path.join(dir, 'kc');
    writeFileSync(
      file,
      'clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    assert.throws(() => new KubeClient(file), /only https on loopback or 198.18.0.0\/15/);
  });
});

test('Reflector: lists, follows the watch from the list version, resumes after the stream ends, relists after 410 Gone', async (t) => {
  const dir = tmp(t);
  const tls = selfSignedCert(path.join(dir, 'pki'), ['127.0.0.1']);
  let items = [pod('a', 1), pod('b', 2)];
  const watches: string[] = [];
  let watchNo = 0;
  let lists = 0;
  const api = await fakeApi(tls, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    assert.equal(url.searchParams.get('fieldSelector'), 'spec.nodeName=node-1');
    if (url.searchParams.get('watch') !== '1') {
      lists++;
      return void res.writeHead(200).end(JSON.stringify({ metadata: { resourceVersion: lists === 1 ? '10' : '20' }, items }));
    }
    watches.push(url.searchParams.get('resourceVersion') ?? '');
    watchNo++;
    res.writeHead(200);
    if (watchNo === 1) {
      // a change, a bookmark, then the server ends the stream (as with timeoutSeconds)
      res.write(
        `${JSON.stringify({ type: 'MODIFIED', object: pod('a', 11) })}\n${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } })}\n`,
      );
      res.end();
    } else if (watchNo === 2) {
      // too old: the reflector must relist; meanwhile b was deleted and c created
      items = [pod('a', 11), pod('c', 16)];
      res.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`);
    } else {
      res.write(`${JSON.stringify({ type: 'DELETED', object: pod('a', 31) })}\n`);
    }
  });
  t.after(() => api.close());
  const client = new KubeClient(kubeconfig(dir, api.port));
  const events: string[] = [];
  const r = new Reflector({
    client,
    path: '/api/v1/pods',
    fieldSelector: 'spec.nodeName=node-1',
    logger: silent,
    retryMs: 10,
    onEvent: (type: EventType, o: KubeObject) => events.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`),
  });
  r.start();
  await r.synced;
  const deadline = Date.now() + 5000;
  while (!events.includes('DELETED a@31') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
  await r.stop();
  client.close();
  assert.deepEqual(events, ['ADDED a@1', 'ADDED b@2', 'MODIFIED a@11', 'ADDED c@16', 'DELETED b@2', 'DELETED a@31']);
  assert.deepEqual(watches, ['10', '15', '20'], 'the first watch starts at the list version, the second after the bookmark, the third after the relist');
  assert.deepEqual(
    r.list().map((o) => o.metadata.name),
    ['c'],
  );
});

test('Reflector: a watch that fails (a 500, a broken stream) resumes from the last version, so no change in between is folded away', async (t) => {
  const dir = tmp(t);
  const tls = selfSignedCert(path.join(dir, 'pki'), ['127.0.0.1']);
  const watches: string[] = [];
  let lists = 0;
  const api = await fakeApi(tls, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    if (url.searchParams.get('watch') !== '1') {
      lists++;
      return void res.writeHead(200).end(JSON.stringify({ metadata: { resourceVersion: '10' }, items: [pod('a', 1)] }));
    }
    const rv = url.searchParams.get('resourceVersion') ?? '';
    watches.push(rv);
    if (watches.length === 1) return void res.writeHead(200).end(`${JSON.stringify({ type: 'MODIFIED', object: pod('a', 11) })}\n{not json`);
    if (watches.length === 2) return void res.writeHead(500).end(JSON.stringify({ kind: 'Status', code: 500, message: 'etcd is busy' }));
    // The version the watch resumes from: the Failed status, then the deletion.
    res.writeHead(200);
    res.write(`${JSON.stringify({ type: 'MODIFIED', object: pod('a', 12) })}\n${JSON.stringify({ type: 'DELETED', object: pod('a', 13) })}\n`);
  });
  t.after(() => api.close());
  const client = new KubeClient(kubeconfig(dir, api.port));
  const events: string[] = [];
  const r = new Reflector({
    client,
    path: '/api/v1/pods',
    logger: silent,
    retryMs: 10,
    onEvent: (type: EventType, o: KubeObject) => events.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`),
  });
  r.start();
  await r.synced;
  const deadline = Date.now() + 5000;
  while (!events.includes('DELETED a@13') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
  await r.stop();
  client.close();
  assert.deepEqual(events, ['ADDED a@1', 'MODIFIED a@11', 'MODIFIED a@12', 'DELETED a@13'], 'every state, none folded into a relist');
  assert.equal(lists, 1, 'no relist after a failed watch');
  assert.deepEqual(watches.slice(0, 3), ['10', '11', '11']);
});

describe('container logs', () => {
  test('selectLog: tailLines counts lines from the end (a final newline ends a line), then limitBytes', () => {
    const log = Buffer.from('one\ntwo\nthree\n');
    assert.equal(selectLog(log, 2, undefined).toString(), 'two\nthree\n');
    assert.equal(selectLog(log, 10, undefined).toString(), 'one\ntwo\nthree\n');
    assert.equal(selectLog(log, 0, undefined).toString(), '');
    assert.equal(selectLog(Buffer.from('a\nb'), 1, undefined).toString(), 'b');
    assert.equal(selectLog(log, 2, 5).toString(), 'two\nt');
    assert.equal(selectLog(log, undefined, undefined).toString(), 'one\ntwo\nthree\n');
  });

  test('the HTTPS endpoint answers /containerLogs with tail, 404 for unknown containers, and follows until the container stops', async (t) => {
    const dir = tmp(t);
    const tls = selfSignedCert(path.join(dir, 'pki'), ['127.0.0.1']);
    const file = path.join(dir, '0.log');
    writeFileSync(file, 'l1\nl2\nl3\n');
    let running = true;
    const server = await startLogServer({
      host: '127.0.0.1',
      port: 0,
      tls,
      followPollMs: 20,
      resolve: (ns, p, c) => (ns === 'ns' && p === 'web-0' && c === 'redis' ? { files: [file], running: () => running } : `container "${c}" not found`),
    });
    t.after(() => server.close());
    const get = (p: string, follow = false) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        https
          .get({ host: '127.0.0.1', port: server.port, path: p, rejectUnauthorized: false }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              body += c;
              if (!follow) return;
              // The container prints one more line, then stops: the stream must carry it and end.
              if (body.includes('l3') && !body.includes('l4')) appendFileSync(file, 'l4\n');
              if (body.includes('l4')) running = false;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
    assert.deepEqual(await get('/containerLogs/ns/web-0/redis?tailLines=2'), { status: 200, body: 'l2\nl3\n' });
    assert.equal((await get('/containerLogs/ns/web-0/other')).status, 404);
    assert.deepEqual(await get('/containerLogs/ns/web-0/redis?follow=true&tailLines=1', true), { status: 200, body: 'l3\nl4\n' });
  });
});
