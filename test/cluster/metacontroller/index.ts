// Metacontroller stand-in for the local cluster (test code): runs one CompositeController
// against a Kubernetes API through a KubeClient (test/support/kube-client: the kube-api
// stand-in's in-process store, or any API server over HTTP with a kubeconfig) and calls the REAL
// hook service over HTTP. See README.md in this folder for what it models and what it does not.
//
//   const mc = startMetacontroller({ store, controller, hookBaseUrl: 'http://127.0.0.1:PORT' });
//   const mc = startMetacontroller({ kubeconfig: '/path/to/kubeconfig', controller, hookBaseUrl });
//   const mc = startMetacontroller({ client: httpClient(kc), controller, hookBaseUrl });
//   await mc.ready;                         // resources discovered, parent/child caches synced
//   await mc.waitForIdle();                 // nothing queued or running (timers may be pending)
//   mc.syncCount('default/my-redis');       // sync + finalize hook calls for that parent
//   mc.stats('default/my-redis');           // ParentStats: calls, status/child writes, failures
//   mc.lastError('default/my-redis');       // error of the latest sync, undefined after a success
//   mc.resync('default/my-redis');          // enqueue a parent, as an informer resync does
//   await mc.stop();
//
// Parent keys are `namespace/name`. `controller` is the CompositeController object (for
// example parsed from metacontroller/composite-controller.yaml with loadCompositeController()).
// startDecoratorController (decorator.ts, re-exported here) runs one DecoratorController likewise.
import { readFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { parse } from 'yaml';
import type { KubeClient } from '../../support/kube-client/index.ts';
import { CompositeControllerRunner, type CompositeController, type ParentStats } from './controller.ts';
import type { BackoffOptions } from './queue.ts';
import { clientOf, runnerHandle, type ApiOptions } from './runner-common.ts';

export type { CompositeController, ParentStats, RelatedRule } from './controller.ts';
export { applyUpdate, merge, canonicalJson, LAST_APPLIED_ANNOTATION } from './apply.ts';
export { groupKey } from './controller.ts';
export type { ApiOptions } from './runner-common.ts';
export {
  DECORATOR_ANNOTATION,
  loadDecoratorController,
  startDecoratorController,
  type DecoratorController,
  type DecoratorControllerHandle,
  type DecoratorControllerOptions,
  type DecoratorStats,
} from './decorator.ts';

/** Where the API is: exactly one of `client`, `store` or `kubeconfig` (ApiOptions). */
export interface MetacontrollerOptions extends ApiOptions {
  controller: CompositeController;
  /** Where the hooks answer, e.g. `http://127.0.0.1:8080`; each hook's webhook path is appended. */
  hookBaseUrl: string;
  /** pino logger (default: silent). */
  logger?: Logger;
  /** Retry backoff after a failed sync: default 5 ms doubling up to 2 s (Metacontroller: up to 1000 s). */
  backoff?: BackoffOptions;
  /** Override of spec.resyncPeriodSeconds in milliseconds (0 disables the periodic resync). */
  resyncPeriodMs?: number;
}

export interface Metacontroller {
  /** Resolves once every resource is discovered and the parent and child caches hold their initial lists; rejects if that failed. */
  readonly ready: Promise<void>;
  /** The client it talks to the API with. */
  readonly client: KubeClient;
  /** The finalizer this controller puts on parents: `metacontroller.io/compositecontroller-<name>`. */
  readonly finalizer: string;
  /** Sync and finalize hook calls made for a parent (`namespace/name`). */
  syncCount(parentKey: string): number;
  /** Everything counted for a parent. */
  stats(parentKey: string): ParentStats;
  /** The error of the parent's latest sync; undefined when it succeeded (or never ran). */
  lastError(parentKey: string): string | undefined;
  /** Enqueue a parent now. */
  resync(parentKey: string): void;
  /** Resolves when ready and no parent is queued or being synced (delayed resyncs do not count). */
  waitForIdle(): Promise<void>;
  stop(): Promise<void>;
}

/** The CompositeController from a YAML file (default: the one we ship). */
export function loadCompositeController(
  path: string | URL = new URL('../../../metacontroller/composite-controller.yaml', import.meta.url),
): CompositeController {
  return parse(readFileSync(path, 'utf8')) as CompositeController;
}

export function startMetacontroller(options: MetacontrollerOptions): Metacontroller {
  const { client, owned } = clientOf(options, 'startMetacontroller');
  const runner = new CompositeControllerRunner({
    client,
    controller: options.controller,
    hookBaseUrl: options.hookBaseUrl,
    logger: options.logger ?? pino({ level: 'silent' }),
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
  });
  return runnerHandle(runner, client, owned);
}
