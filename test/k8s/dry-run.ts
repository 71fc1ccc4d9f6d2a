// The REAL kube-apiserver's verdict on the objects we produce (the hook's children, the install
// manifests), in place of a re-implementation of its checks: each object is created with
// `?dryRun=All&fieldValidation=Strict`, as `kubectl apply --validate=strict` sends it, so the
// server runs its decoding (an unknown or duplicate field is an error), defaulting, validation and
// admission, and stores nothing. What it warns about (a deprecated API, a pod template that a
// namespace's Pod Security level forbids, ...) counts as a refusal too: we ship nothing it warns of.
//
//   const missing = dryRunMissing();                   // why this machine cannot run it, or undefined
//   describe('... on the real kube-apiserver', { skip: missing ?? false }, () => {
//     let server: DryRunServer;
//     before(async () => (server = await startDryRunServer({ namespaces: ['shop'] })));  // ~3-4 s
//     after(() => server?.close());
//     test('...', async () => assert.deepEqual(await server.refusals(objects), []));
//   });
//
// One server per test file, started inside a describe (a file-level hook would be shared by every
// file of a lane that runs in one process). No controllers run: nothing is reconciled, nothing
// needs to be cleaned up between tests.
// Invariants: a bare control plane (etcd + kube-apiserver) on 127.0.0.1 whose Service range is
// never routed (BARE_SUBNET, shared with api-server.ts); a dry run never changes what the server
// holds (only create() does), so tests of one file may judge objects concurrently and in any order.
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError } from '../support/kube-client/objects.ts';
import { apiError, resourcePath } from '../support/kube-client/http.ts';
import { httpClient, type HttpKubeClient } from '../support/kube-client/index.ts';
import { isRecord } from '../support/records.ts';
import { BARE_SUBNET } from './api-server.ts';
import { isBuilt } from './build.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';

type Json = Record<string, unknown>;

/** Requests in flight at once in refusals(): enough to hide the round trips, few enough for two loaded cores. */
const CONCURRENCY = 4;

export interface Answer {
  object: Json;
  warnings: string[];
}

export interface DryRunServer {
  readonly controlPlane: ControlPlane;
  /**
   * The object as the server would store it, and the text of its Warning headers; a refusal
   * rejects with a KubeApiError carrying the server's Status.
   */
  dryRun(obj: unknown): Promise<Answer>;
  /** A real create (strict field validation too): for what other objects need to exist (a Namespace, a CRD). */
  create(obj: unknown): Promise<Json>;
  /**
   * Dry-runs every object (a few at a time) and returns one line per refusal or warning,
   * `Kind/name: <the server's message>` or `Kind/name: warning: <its text>`, in the objects'
   * order: [] when the server accepts them all without a word.
   */
  refusals(objects: readonly unknown[]): Promise<string[]>;
  close(): Promise<void>;
}

export interface DryRunOptions {
  /**
   * Namespaces the objects live in: each is created unless it exists (default does), with the
   * `default` ServiceAccount that no controller makes here (a Pod is refused without it).
   */
  namespaces?: string[];
  /** YAML files of CRDs to apply (and wait to be Established) so that objects of their kinds can be judged. */
  crds?: string[];
}

/** Why no server can be started here (the control plane is not built), or undefined. */
export function dryRunMissing(): string | undefined {
  try {
    return isBuilt() ? undefined : 'the kube-apiserver is not built (npm run cluster:build)';
  } catch (err) {
    return `the kube-apiserver cannot be located: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** `StatefulSet/my-redis-master` */
function objectName(obj: unknown): string {
  const meta = isRecord(obj) && isRecord(obj['metadata']) ? obj['metadata'] : {};
  return `${String(isRecord(obj) ? obj['kind'] : obj)}/${String(meta['name'] ?? meta['generateName'])}`;
}

/**
 * What the server stored differently from what was sent: `.path: sent X, stored Y` for every value
 * it dropped or rewrote (a quantity put in canonical form, say); what it added (defaults) is not
 * listed. An empty map or list it leaves out counts as dropped.
 */
export function rewrites(sent: unknown, stored: unknown, at = ''): string[] {
  if (isRecord(sent) || Array.isArray(sent)) {
    if (typeof stored !== 'object' || stored === null || Array.isArray(sent) !== Array.isArray(stored))
      return [`${at}: sent ${JSON.stringify(sent)}, stored ${JSON.stringify(stored)}`];
    const s = sent as Record<string, unknown>;
    const t = stored as Record<string, unknown>;
    return Object.keys(s).flatMap((k) => rewrites(s[k], t[k], Array.isArray(sent) ? `${at}[${k}]` : `${at}.${k}`));
  }
  return sent === stored ? [] : [`${at}: sent ${JSON.stringify(sent)}, stored ${JSON.stringify(stored)}`];
}

/** The text of a Warning header: `299 - "text"`, the text a quoted-string (RFC 7234). */
function warningText(header: string): string {
  const quoted = /^\d{3} \S+ "((?:[^"\\]|\\.)*)"/.exec(header);
  return quoted ? (quoted[1] as string).replace(/\\(.)/g, '$1') : header;
}

export async function startDryRunServer(options: DryRunOptions = {}): Promise<DryRunServer> {
  const cp = await startControlPlane({ subnet: BARE_SUBNET, controllers: false });
  let discovery: HttpKubeClient | undefined;
  try {
    if (options.crds?.length) {
      const files = options.crds.flatMap((f) => ['-f', f]);
      await cp.kubectl(['apply', '--server-side', ...files]);
      await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...files]);
    }
    const kc = new KubeConfig();
    kc.loadFromFile(cp.adminKubeconfig);
    discovery = httpClient(kc);
    const client = discovery;
    // One keep-alive pool: the kube-client's transport makes an agent (so a TLS handshake) per
    // request, which would double the time of a few hundred dry runs.
    const tls: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    const agent = new https.Agent({
      keepAlive: true,
      maxSockets: CONCURRENCY,
      ca: tls.ca,
      cert: tls.cert,
      key: tls.key,
    });
    const post = (path: string, query: Record<string, string>, body: unknown) =>
      new Promise<Answer>((resolve, reject) => {
        const url = new URL(cp.server + path);
        for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
        const req = https.request(
          url,
          { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'application/json' } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => {
              let parsed: unknown;
              try {
                parsed = JSON.parse(text);
              } catch {
                parsed = undefined;
              }
              const status = res.statusCode ?? 0;
              const header = res.headers['warning'];
              const warnings = (header === undefined ? [] : Array.isArray(header) ? header : [header]).map(warningText);
              if (status >= 200 && status < 300 && isRecord(parsed)) resolve({ object: parsed, warnings });
              else reject(apiError(status, parsed, text));
            });
          },
        );
        req.setTimeout(30_000, () => req.destroy(new Error(`dry-run: POST ${url.pathname}: no answer within 30 s`)));
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });

    const send = async (obj: unknown, query: Record<string, string>) => {
      if (!isRecord(obj) || typeof obj['apiVersion'] !== 'string' || typeof obj['kind'] !== 'string')
        throw new Error(`dry-run: ${objectName(obj)} has no apiVersion and kind`);
      const res = await client.resourceForKind(obj['apiVersion'], obj['kind']);
      const namespace = isRecord(obj['metadata']) ? obj['metadata']['namespace'] : undefined;
      const path = resourcePath(res, typeof namespace === 'string' ? namespace : undefined);
      return post(path, { ...query, fieldValidation: 'Strict' }, obj);
    };
    const server: DryRunServer = {
      controlPlane: cp,
      dryRun: (obj) => send(obj, { dryRun: 'All' }),
      create: async (obj) => (await send(obj, {})).object,
      async refusals(objects) {
        const verdicts: string[][] = objects.map(() => []);
        let next = 0;
        const worker = async () => {
          for (let i = next++; i < objects.length; i = next++) {
            const name = objectName(objects[i]);
            try {
              const { warnings } = await server.dryRun(objects[i]);
              verdicts[i] = warnings.map((w) => `${name}: warning: ${w}`);
            } catch (err) {
              verdicts[i] = [
                `${name}: ${err instanceof KubeApiError ? (err.status.message ?? err.reason) : String(err)}`,
              ];
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(CONCURRENCY, objects.length) }, worker));
        return verdicts.flat();
      },
      async close() {
        agent.destroy();
        await client.close();
        await cp.stop();
      },
    };
    const exists = (err: unknown) => {
      if (!(err instanceof KubeApiError && err.code === 409)) throw err;
    };
    for (const name of options.namespaces ?? []) {
      await server.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(exists);
      await server
        .create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } })
        .catch(exists);
    }
    return server;
  } catch (err) {
    await discovery?.close();
    await cp.stop();
    throw err;
  }
}
