// A REAL Metacontroller (METACONTROLLER_BIN) against the real control plane, with a trivial
// CompositeController of our own: parent kind Widget (a CRD this test installs), one ConfigMap
// child per Widget, sync and finalize hooks served by a node http server on 127.0.0.1 that the
// hook Service name `widget-hook.mc-test` maps to (test/k8s/metacontroller-real.ts). It checks
// what the hook's wire contract (../shared/notes/metacontroller-contract.md) says: the URL it dials, the hook
// request's shape, the finalizer, the child's labels/ownerRef/last-applied annotation, InPlace
// updates, observedGeneration, and finalize on delete.
// Skips (with the reason) unless METACONTROLLER_BIN is set and the control plane is built
// (`node test/k8s/cli.ts build`). Owns: its control plane (Service CIDR 198.19.77.0/24), its
// Metacontroller process and its hook server; all are stopped in `after`, whatever happened.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isBuilt } from './build.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import {
  metacontrollerBin,
  realMetacontrollerUnavailable,
  startRealMetacontroller,
  type RealMetacontroller,
} from './metacontroller-real.ts';
import { METACONTROLLER_CRDS, missingSharedReason } from './operator.ts';

const SUBNET = 77;
const NS = 'mc-test';
const HOOK_SERVICE = 'widget-hook';
const CONTROLLER = 'widgets';
const FINALIZER = `metacontroller.io/compositecontroller-${CONTROLLER}`;

const BIN = metacontrollerBin();
function controlPlaneMissing(): string | undefined {
  try {
    return isBuilt() ? undefined : 'the control plane is not built yet (node test/k8s/cli.ts build)';
  } catch (err) {
    return `the control plane cannot be located: ${err instanceof Error ? err.message : String(err)}`;
  }
}
const skip = realMetacontrollerUnavailable(BIN) ?? controlPlaneMissing() ?? missingSharedReason();

type Json = Record<string, unknown>;
interface HookCall {
  path: string;
  host: string;
  contentType: string;
  body: Json;
  at: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}\n${mc?.logTail(20).join('\n') ?? ''}`,
      );
    await sleep(200);
  }
}

const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.mctest.example.com' },
  spec: {
    group: 'mctest.example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

function compositeController(port: number): Json {
  const webhook = (p: string) => ({
    service: { name: HOOK_SERVICE, namespace: NS, port, protocol: 'http' },
    path: p,
    timeout: '5s',
  });
  return {
    apiVersion: 'metacontroller.k8s.io/v1alpha1',
    kind: 'CompositeController',
    metadata: { name: CONTROLLER },
    spec: {
      generateSelector: true,
      parentResource: { apiVersion: 'mctest.example.com/v1', resource: 'widgets' },
      childResources: [{ apiVersion: 'v1', resource: 'configmaps', updateStrategy: { method: 'InPlace' } }],
      hooks: {
        sync: { version: 'v2', webhook: webhook('/sync') },
        finalize: { version: 'v2', webhook: webhook('/finalize') },
      },
    },
  };
}

/**
 * The hook: one ConfigMap `<parent>-child` carrying spec.message. Finalize returns no children and
 * says finalized only once none is observed, so Metacontroller itself deletes the child (with
 * `finalized: true` at once it would remove its finalizer first and leave the child to the garbage
 * collector, which here notices a freshly installed CRD's dependents only after its 30 s resync).
 */
function hookResponse(call: HookCall): Json {
  const parent = call.body['parent'] as { metadata: { name: string }; spec?: { message?: unknown } };
  if (call.path === '/finalize') return { children: [], finalized: observedChildren(call).length === 0 };
  const message = String(parent.spec?.message ?? '');
  return {
    status: { message },
    children: [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${parent.metadata.name}-child` }, data: { message } },
    ],
  };
}

/** The `namespace/name` keys of the ConfigMaps a hook request observed. */
function observedChildren(call: HookCall): string[] {
  return Object.keys((call.body['children'] as Record<string, Json> | undefined)?.['ConfigMap.v1'] ?? {});
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (s += c));
    req.on('end', () => resolve(s));
    req.on('error', reject);
  });
}

let cp: ControlPlane | undefined;
let mc: RealMetacontroller | undefined;
let hook: Server | undefined;
let hookPort = 0;
let logDir = '';
const calls: HookCall[] = [];

// One describe: with --test-isolation=none (test/lanes.ts) file-level hooks would be the whole
// lane's, keeping this control plane up until its last test.
describe('the real Metacontroller', () => {
  before(async () => {
    if (skip) return;
    logDir = mkdtempSync(path.join(os.tmpdir(), 'mc-real-test-'));
    hook = createServer((req, res) => {
      void readBody(req)
        .then((text) => {
          const call: HookCall = {
            path: req.url ?? '',
            host: req.headers.host ?? '',
            contentType: req.headers['content-type'] ?? '',
            body: JSON.parse(text) as Json,
            at: Date.now(),
          };
          calls.push(call);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(hookResponse(call)));
        })
        .catch(() => res.writeHead(400).end());
    });
    await new Promise<void>((r) => hook?.listen(0, '127.0.0.1', r));
    hookPort = (hook.address() as { port: number }).port;
    cp = await startControlPlane({ subnet: SUBNET });
    await cp.kubectl(['apply', '-f', METACONTROLLER_CRDS]);
    await cp.kubectl(['apply', '-f', '-'], JSON.stringify(widgetCrd));
    // kubectl wait fails at once ("status.conditions accessor error") on a CRD the API server has not
    // given conditions yet, a moment after the apply; try again until it can wait.
    const established = () =>
      cp!.kubectl([
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/widgets.mctest.example.com',
        'crd/compositecontrollers.metacontroller.k8s.io',
      ]);
    for (let i = 0; ; i++) {
      const err = await established().then(
        () => undefined,
        (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
      );
      if (err === undefined) break;
      if (i >= 40 || !/accessor error/.test(String(err))) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
    await cp.kubectl(['create', 'namespace', NS]);
    mc = await startRealMetacontroller({
      bin: BIN ?? '',
      kubeconfig: cp.adminKubeconfig,
      logFile: path.join(logDir, 'metacontroller.log'),
      hosts: { [`${HOOK_SERVICE}.${NS}`]: '127.0.0.1' },
    });
    await cp.kubectl(['apply', '-f', '-'], JSON.stringify(compositeController(hookPort)));
  });

  after(async () => {
    await mc?.stop();
    await new Promise<void>((r) => (hook ? hook.close(() => r()) : r()));
    await cp?.stop();
    if (logDir && process.env['KEEP_CLUSTER_DATA'] !== '1') rmSync(logDir, { recursive: true, force: true });
  });

  const getJson = async (args: string[]): Promise<Json> =>
    JSON.parse(await (cp as ControlPlane).kubectl(['get', '-o', 'json', ...args])) as Json;
  const meta = (o: Json) =>
    o['metadata'] as {
      uid: string;
      generation?: number;
      finalizers?: string[];
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      ownerReferences?: Json[];
    };

  test(
    'a real Metacontroller calls our hook by Service name and manages the child it returns',
    { skip, timeout: 240_000 },
    async (t) => {
      assert.ok(cp && mc);
      const t0 = Date.now();
      const phases: string[] = [];
      const phase = (name: string) => phases.push(`${name} ${Date.now() - t0} ms`);
      t.diagnostic(`metacontroller ${mc.version() ?? '?'} (${BIN}), args: ${mc.args.join(' ')}`);
      await cp.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'mctest.example.com/v1',
          kind: 'Widget',
          metadata: { name: 'w1', namespace: NS },
          spec: { message: 'hello' },
        }),
      );
      const parent = await getJson(['widget', '-n', NS, 'w1']);
      const uid = meta(parent).uid;

      // The child it creates: our data, controller-uid label, controllerRef, last-applied annotation.
      const child = await eventually('ConfigMap w1-child created', async () => {
        const cm = await getJson(['configmap', '-n', NS, 'w1-child']);
        return (cm['data'] as Json | undefined)?.['message'] === 'hello' ? cm : undefined;
      });
      phase('child created');
      assert.equal(meta(child).labels?.['controller-uid'], uid);
      assert.deepEqual(meta(child).ownerReferences, [
        {
          apiVersion: 'mctest.example.com/v1',
          kind: 'Widget',
          name: 'w1',
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      const lastApplied = JSON.parse(
        meta(child).annotations?.['metacontroller.k8s.io/last-applied-configuration'] ?? 'null',
      ) as Json;
      assert.deepEqual(lastApplied['data'], { message: 'hello' });

      // The call it made: POST http://<service>.<namespace>:<service.port>/sync, the v2 request shape.
      const first = calls.find((c) => c.path === '/sync');
      assert.ok(first, 'the sync hook was called');
      assert.equal(first.host, `${HOOK_SERVICE}.${NS}:${hookPort}`);
      assert.equal(first.contentType, 'application/json');
      assert.deepEqual(Object.keys(first.body).sort(), ['children', 'controller', 'finalizing', 'parent', 'related']);
      assert.equal(first.body['finalizing'], false);
      assert.deepEqual(first.body['related'], {}, 'no customize hook: related is an empty map');
      assert.deepEqual(Object.keys(first.body['children'] as Json), ['ConfigMap.v1']);
      assert.equal((first.body['controller'] as { metadata: { name: string } }).metadata.name, CONTROLLER);
      assert.deepEqual(observedChildren(first), []);
      const later = await eventually('a sync that observes the child', async () =>
        calls.find((c) => c.path === '/sync' && observedChildren(c).length > 0),
      );
      assert.deepEqual(observedChildren(later), [`${NS}/w1-child`]);

      // The parent: our finalizer (a finalize hook is configured), the hook's status + observedGeneration.
      const synced = await eventually('parent status written', async () => {
        const p = await getJson(['widget', '-n', NS, 'w1']);
        return (p['status'] as Json | undefined)?.['observedGeneration'] === meta(p).generation ? p : undefined;
      });
      assert.deepEqual(meta(synced).finalizers, [FINALIZER]);
      assert.deepEqual(synced['status'], { message: 'hello', observedGeneration: 1 });

      // InPlace: a spec change reaches the existing child (same uid), status follows the generation.
      await cp.kubectl([
        'patch',
        'widget',
        '-n',
        NS,
        'w1',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { message: 'world' } }),
      ]);
      const updated = await eventually('child updated in place', async () => {
        const cm = await getJson(['configmap', '-n', NS, 'w1-child']);
        return (cm['data'] as Json | undefined)?.['message'] === 'world' ? cm : undefined;
      });
      phase('child updated');
      assert.equal(meta(updated).uid, meta(child).uid);
      await eventually('status of generation 2', async () => {
        const p = await getJson(['widget', '-n', NS, 'w1']);
        const s = p['status'] as Json | undefined;
        return s?.['observedGeneration'] === 2 && s['message'] === 'world' ? true : undefined;
      });

      // Delete: finalize is called (finalizing: true) while the child exists; Metacontroller deletes
      // the child it no longer gets back, calls finalize again, and `finalized` lets the parent go.
      const callsBefore = calls.length;
      await cp.kubectl(['delete', 'widget', '-n', NS, 'w1', '--wait=false']);
      await eventually('parent gone', async () =>
        (await cp?.kubectl(['get', 'widget', '-n', NS, '-o', 'name']))?.trim() === '' ? true : undefined,
      );
      phase('parent gone');
      const fin = calls.slice(callsBefore).filter((c) => c.path === '/finalize');
      assert.ok(fin.length >= 2, `finalize called while the child existed and after (got ${fin.length} calls)`);
      assert.ok(fin.every((c) => c.body['finalizing'] === true && c.host === `${HOOK_SERVICE}.${NS}:${hookPort}`));
      assert.deepEqual(observedChildren(fin[0] as HookCall), [`${NS}/w1-child`]);
      assert.deepEqual(observedChildren(fin[fin.length - 1] as HookCall), []);
      assert.equal(
        (await cp.kubectl(['get', 'configmap', '-n', NS, '-l', `controller-uid=${uid}`, '-o', 'name'])).trim(),
        '',
      );
      phase('child gone');

      assert.ok(mc.alive(), `metacontroller exited:\n${mc.logTail(20).join('\n')}`);
      const errors = mc.logTail(500).filter((l) => /"level":"error"/.test(l));
      assert.deepEqual(errors, [], 'metacontroller logged no errors');
      t.diagnostic(`hook calls: ${calls.map((c) => c.path).join(' ')}; ${phases.join(', ')}`);
    },
  );
});
