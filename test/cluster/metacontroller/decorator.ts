// The DecoratorController side of the Metacontroller stand-in (test code): runs one
// DecoratorController against a Kubernetes API through a KubeClient, as startMetacontroller runs
// one CompositeController, and calls the REAL hook service over HTTP. See README.md in this folder
// for what it models and what it does not.
//
//   const dc = startDecoratorController({ store, controller: loadDecoratorController(), hookBaseUrl });
//   await dc.ready;                         // resources discovered, target/attachment caches synced
//   dc.stats('default/my-redis');           // DecoratorStats: calls, attachment/target writes, failures
//   await dc.waitForIdle();  await dc.stop();
//
// Target keys are `namespace/name`.
import { readFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { parse } from 'yaml';
import type { KubeClient } from '../../support/kube-client/index.ts';
import { DecoratorControllerRunner } from './decorator-runner.ts';
import type { DecoratorController, DecoratorStats } from './model.ts';
import type { BackoffOptions } from './queue.ts';
import { clientOf, runnerHandle, type ApiOptions } from './runner-common.ts';

export type { DecoratorController, DecoratorStats } from './model.ts';
export { DECORATOR_ANNOTATION } from './decorator-sync.ts';

/** Where the API is: exactly one of `client`, `store` or `kubeconfig` (ApiOptions). */
export interface DecoratorControllerOptions extends ApiOptions {
  controller: DecoratorController;
  /** Where the hooks answer, e.g. `http://127.0.0.1:8080`; each hook's webhook path is appended. */
  hookBaseUrl: string;
  /** pino logger (default: silent). */
  logger?: Logger;
  /** Retry backoff after a failed sync: default 5 ms doubling up to 2 s (Metacontroller: up to 1000 s). */
  backoff?: BackoffOptions;
  /** Override of spec.resyncPeriodSeconds in milliseconds (0 disables the periodic resync). */
  resyncPeriodMs?: number;
}

export interface DecoratorControllerHandle {
  /** Resolves once every resource is discovered and the target and attachment caches hold their initial lists; rejects if that failed. */
  readonly ready: Promise<void>;
  /** The client it talks to the API with. */
  readonly client: KubeClient;
  /** The finalizer it puts on targets when a finalize hook is configured: `metacontroller.io/decoratorcontroller-<name>`. */
  readonly finalizer: string;
  /** Sync and finalize hook calls made for a target (`namespace/name`). */
  syncCount(targetKey: string): number;
  /** Everything counted for a target. */
  stats(targetKey: string): DecoratorStats;
  /** The error of the target's latest sync; undefined when it succeeded (or never ran). */
  lastError(targetKey: string): string | undefined;
  /** Enqueue a target now (once ready). */
  resync(targetKey: string): void;
  /** Resolves when ready and no target is queued or being synced (delayed resyncs do not count). */
  waitForIdle(): Promise<void>;
  stop(): Promise<void>;
}

/** A DecoratorController from a YAML file (default: the monitoring component's). */
export function loadDecoratorController(
  path: string | URL = new URL('../../../manifests/components/monitoring/decorator-controller.yaml', import.meta.url),
): DecoratorController {
  const dc = parse(readFileSync(path, 'utf8')) as DecoratorController;
  if (dc?.kind !== 'DecoratorController') throw new Error(`${String(path)}: not a DecoratorController (kind ${String(dc?.kind)})`);
  return dc;
}

export function startDecoratorController(options: DecoratorControllerOptions): DecoratorControllerHandle {
  const { client, owned } = clientOf(options, 'startDecoratorController');
  const runner = new DecoratorControllerRunner({
    client,
    controller: options.controller,
    hookBaseUrl: options.hookBaseUrl,
    logger: options.logger ?? pino({ level: 'silent' }),
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
  });
  return runnerHandle(runner, client, owned);
}
