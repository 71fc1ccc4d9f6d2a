// The sidecar's pino logger: JSON lines (one object per line) so a log pipeline can index the
// namespace/name that every line about a Redis carries (workers log through child loggers bound
// to them). Human-friendly output only when stdout is a terminal AND pino-pretty can be loaded:
// the production image has dev dependencies pruned. A copy of src/server/logger.ts's logic: the
// sidecar may not import the hook service.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.ts';

export interface LoggerOptions {
  level: LogLevel;
  /** Where JSON lines go; default stdout. Tests pass a stream to capture them. */
  destination?: DestinationStream;
  /** Force pretty output on or off; default: stdout is a TTY and pino-pretty can be loaded. */
  pretty?: boolean;
}

function prettyAvailable(): boolean {
  try {
    import.meta.resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

export function createLogger(options: LoggerOptions): Logger {
  const base = { level: options.level };
  if (options.destination !== undefined) return pino(base, options.destination);
  const pretty = options.pretty ?? (process.stdout.isTTY === true && prettyAvailable());
  if (pretty) return pino({ ...base, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } });
  // Synchronous stdout: the last lines before an exit (why it failed, the shutdown) must not be lost.
  return pino(base, pino.destination({ dest: 1, sync: true }));
}
