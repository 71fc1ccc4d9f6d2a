// The pino logger of both entry points: JSON lines, one object per line, so a log pipeline can
// index the Redis namespace/name (and uid) that every line about a Redis carries through child
// loggers. Human-friendly output (pino-pretty) only when stdout is a terminal AND pino-pretty is
// installed: the production image has dev dependencies pruned, and `docker run -t` must not
// crash it for want of a pretty printer.
import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogLevel } from './env.ts';

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
  if (pretty)
    return pino({ ...base, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } });
  // Synchronous stdout: short lines are cheap to write, and an asynchronous writer loses the
  // last lines (the fatal reason, the shutdown) when the process exits.
  return pino(base, pino.destination({ dest: 1, sync: true }));
}
