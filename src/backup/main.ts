// The backup Job's entry point (the operator image, `node src/backup/main.ts`): checks its
// configuration, takes one backup, and writes the result as one JSON line to stdout and to the
// termination log (the pod's status carries it to whoever reads the Job).
// Exit codes: 0 done; 1 failed, worth retrying (unreachable, not ready, volume full); 2 failed for
// good until something changes (bad configuration, refused credentials, no such bucket, a volume
// that is not mounted or not writable). The line is bounded (failure.ts resultLine): the
// termination log keeps 4096 bytes.
import { pino } from 'pino';
import { createLogger } from '../runtime/logger.ts';
import { backupConfig } from './config.ts';
import { asFailure, configFailure, exitCode, failureResult, reportResult, runMain } from './failure.ts';
import { runBackup } from './run.ts';

async function main(): Promise<number> {
  const parsed = backupConfig(process.env);
  if (!parsed.ok) {
    const failure = configFailure(parsed.errors);
    reportResult(process.env['TERMINATION_LOG'] ?? '/dev/termination-log', failureResult(failure));
    return exitCode(failure);
  }
  const config = parsed.config;
  // Logs on stderr: stdout carries the one result line.
  const log = createLogger({ level: config.logLevel, destination: pino.destination({ dest: 2, sync: true }) }).child({
    component: 'backup',
    namespace: config.namespace,
    name: config.name,
  });
  try {
    const result = await runBackup(config, log);
    log.info({ location: result.location, bytes: result.bytes, offset: result.offset }, 'backup stored');
    reportResult(config.terminationLog, { ok: true, ...result });
    return 0;
  } catch (err) {
    const failure = asFailure(err, 'backup failed', (e) => e.stack ?? e.message);
    log.error({ err: failure.message, permanent: failure.permanent }, 'backup failed');
    reportResult(config.terminationLog, failureResult(failure));
    return exitCode(failure);
  }
}

runMain(main);
