// Entry point of the hook service (`npm start`): config from the environment, then listen.
// Invariants: a bad configuration exits 1 before anything listens, with one line per bad
// variable on stderr; SIGTERM/SIGINT make /readyz answer 503, let in-flight requests finish,
// close, and exit 0. A shutdown that cannot finish within the grace period exits 1 rather
// than hanging until Kubernetes kills the pod.
import { buildApp, createLifecycle } from './app.ts';
import { loadConfig } from './config.ts';
import { createLogger } from '../runtime/logger.ts';

/** Below Kubernetes' default 30 s terminationGracePeriodSeconds; far above any hook call. */
const SHUTDOWN_GRACE_MS = 20_000;

const loaded = loadConfig(process.env);
if (!loaded.ok) {
  process.stderr.write(
    `redis-operator hook service: invalid configuration\n${loaded.errors.map((e) => `  ${e}\n`).join('')}`,
  );
  process.exit(1);
}
const config = loaded.config;
// Writes synchronously (logger.ts), so process.exit below never loses the last lines.
const logger = createLogger({ level: config.logLevel });
const lifecycle = createLifecycle();
const app = buildApp({
  logger,
  bodyLimitBytes: config.bodyLimitBytes,
  lifecycle,
  hookOptions: {
    operatorImage: config.operatorImage,
    runbookBaseUrl: config.runbookBaseUrl,
    operatorNamespace: config.operatorNamespace,
  },
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  lifecycle.draining = true;
  logger.info({ signal }, 'shutting down: readiness is now false, finishing in-flight requests');
  const timer = setTimeout(() => {
    logger.error({ graceMs: SHUTDOWN_GRACE_MS }, 'shutdown did not finish in time; exiting');
    process.exit(1);
  }, SHUTDOWN_GRACE_MS);
  timer.unref();
  try {
    await app.close();
    logger.info('hook service stopped');
    process.exit(0);
  } catch (error) {
    logger.error({ err: error }, 'error while closing the server');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  logger.fatal({ err: error, port: config.port, host: config.host }, 'cannot listen');
  process.exit(1);
}
// With PORT=0 the OS chose the port: say which in a field a harness can read back (fastify's
// own line has it only inside its message text).
const bound = app.server.address();
logger.info(
  { host: config.host, port: typeof bound === 'object' && bound !== null ? bound.port : config.port },
  'hook service listening',
);
