// Command line for the tests' S3-compatible server (versitygw):
//   node test/s3/cli.ts build          build (or find cached) the server; prints s3_server=<path>
//   node test/s3/cli.ts up [ip] [port] start it (default 127.0.70.1:7070) and wait (Ctrl-C stops
//                                      it and removes its data); prints the endpoint and credentials
// Invariant: nothing is left running after the command ends (the server dies with it).
import { statSync } from 'node:fs';
import { buildS3Server, isS3ServerBuilt, s3ServerBinary, S3_SERVER_NAME, S3_SERVER_VERSION } from './build.ts';
import { startS3Server } from './server.ts';

const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

async function main(): Promise<void> {
  const cmd = process.argv[2] ?? 'help';
  if (cmd === 'build') {
    const t0 = Date.now();
    const warm = isS3ServerBuilt();
    const bin = await buildS3Server(log);
    console.log(`s3_server=${bin}`);
    console.log(`s3_server_mib=${(statSync(bin).size / 2 ** 20).toFixed(1)}`);
    console.log(`${warm ? 'warm' : 'cold'}_build_s=${Math.round((Date.now() - t0) / 1000)}`);
    return;
  }
  if (cmd === 'up') {
    await buildS3Server(log);
    const ip = process.argv[3] ?? '127.0.70.1';
    const port = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
    const s3 = await startS3Server(port === undefined ? { ip } : { ip, port });
    log(`${S3_SERVER_NAME} ${S3_SERVER_VERSION} up, data in ${s3.dataDir} (path-style addressing)`);
    console.log(`AWS_ENDPOINT_URL=${s3.endpoint}`);
    console.log(`AWS_ACCESS_KEY_ID=${s3.accessKeyId}`);
    console.log(`AWS_SECRET_ACCESS_KEY=${s3.secretAccessKey}`);
    console.log(`AWS_REGION=${s3.region}`);
    const stop = () => {
      log('stopping');
      void s3.stop().then(() => process.exit(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await new Promise(() => undefined);
    return;
  }
  console.log(
    `usage: node test/s3/cli.ts build|up [ip] [port]\n(${S3_SERVER_NAME} ${S3_SERVER_VERSION} for this checkout: ${s3ServerBinary()})`,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
