// A container's termination message, by the kubelet's rule (kuberuntime getTerminationMessage and
// readLastStringFromContainerLogs): the last 4096 bytes of the file at terminationMessagePath and,
// under `terminationMessagePolicy: FallbackToLogsOnError`, when that file is empty (or missing) and
// the container exited non-zero, the last 80 lines of its log capped to their last 2048 bytes.
// Each container instance gets its own empty file (the runner makes it), so a restart never shows
// the previous instance's message. Pure, but for readTail.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { selectLog } from './log-server.ts';

export const MAX_MESSAGE_BYTES = 4096;
export const MAX_LOG_LINES = 80;
export const MAX_LOG_BYTES = 2048;
export const DEFAULT_MESSAGE_PATH = '/dev/termination-log';

/** The last `max` bytes of a file; undefined when it does not exist or cannot be read. */
export function readTail(file: string, max: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, max);
    const buf = Buffer.alloc(length);
    const read = readSync(fd, buf, 0, length, size - length);
    return buf.subarray(0, read);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

export interface MessageSources {
  /** The termination message file's last MAX_MESSAGE_BYTES (undefined: missing). */
  file: Buffer | undefined;
  policy: string | undefined;
  exitCode: number;
  /** The log's last MAX_LOG_BYTES, read only when the fallback applies. */
  logTail: () => Buffer | undefined;
}

export function terminationMessage(s: MessageSources): string {
  const file = s.file ?? Buffer.alloc(0);
  if (file.length > 0 || s.policy !== 'FallbackToLogsOnError' || s.exitCode === 0) return file.toString('utf8');
  // The last 80 lines, then (a circular buffer in the kubelet) their last 2048 bytes: the
  // log's last 2048 bytes hold both whenever the lines are longer.
  const lines = selectLog(s.logTail() ?? Buffer.alloc(0), MAX_LOG_LINES, undefined);
  return lines.subarray(Math.max(0, lines.length - MAX_LOG_BYTES)).toString('utf8');
}

/** The runtime's own message (a start error) and the container's, joined as the kubelet does. */
export function joinMessages(runtime: string | undefined, container: string): string | undefined {
  if (!container) return runtime;
  return runtime ? `${runtime}: ${container}` : container;
}
