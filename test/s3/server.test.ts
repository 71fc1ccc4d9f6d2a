// The real S3-compatible server (versitygw, POSIX backend) on 127.0.70.1, driven by the official
// AWS SDK for JavaScript v3 as a backup uploader would drive a real S3: bucket, multipart upload
// of ~20 MB, prefix listing, download with a checksum, deletion, and refused credentials.
// Skips (does not fail) when the server's binary is not built: `node test/s3/cli.ts build`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import {
  isS3ServerBuilt,
  s3ServerBinary,
  startS3Server,
  S3_SERVER_NAME,
  S3_SERVER_VERSION,
  type S3Server,
} from './server.ts';

const IP = '127.0.70.1';
const BUCKET = 'redis-backups';
const PREFIX = 'cluster-a/shard-0/';
const BIG_KEY = `${PREFIX}dump-0001.rdb`;
const PART_SIZE = 5 * 1024 * 1024; // S3's minimum part size (all but the last part)
const BIG = randomBytes(4 * PART_SIZE + 123_457); // ~20 MB: four full parts and a short last one

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

function client(
  s3: S3Server,
  credentials = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
): S3Client {
  return new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials, maxAttempts: 1 });
}

/** The S3 error an SDK call rejected with: its code (name) and HTTP status. */
async function s3Error(call: Promise<unknown>): Promise<{ name: string; status: number | undefined }> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof S3ServiceException, `expected an S3 error, got ${String(err)}`);
    return { name: err.name, status: err.$metadata.httpStatusCode };
  }
  assert.fail('the call succeeded');
}

test(`${S3_SERVER_NAME} on ${IP} serves the AWS SDK: bucket, multipart upload, list, get, delete, auth`, async (t) => {
  if (!isS3ServerBuilt()) {
    let where = '';
    try {
      where = ` at ${s3ServerBinary()}`;
    } catch (err) {
      where = ` (${err instanceof Error ? err.message : String(err)})`;
    }
    t.skip(`${S3_SERVER_NAME} ${S3_SERVER_VERSION} is not built${where}: run 'node test/s3/cli.ts build'`);
    return;
  }
  const s3 = await startS3Server({ ip: IP });
  const c = client(s3);
  t.after(async () => {
    c.destroy(); // closes its keep-alive connections first: versitygw's shutdown waits for them
    const t0 = Date.now();
    await s3.stop();
    assert.ok(Date.now() - t0 < 4000, `stop() took ${Date.now() - t0} ms`);
  });

  await t.test('creates a bucket', async () => {
    await c.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await c.send(new HeadBucketCommand({ Bucket: BUCKET }));
    const { Buckets } = await c.send(new ListBucketsCommand({}));
    assert.deepEqual(
      Buckets?.map((b) => b.Name),
      [BUCKET],
    );
  });

  await t.test('multipart-uploads ~20 MB with lib-storage Upload', async () => {
    const upload = new Upload({
      client: c,
      params: { Bucket: BUCKET, Key: BIG_KEY, Body: BIG },
      partSize: PART_SIZE,
      queueSize: 2,
    });
    const parts = new Set<number>();
    upload.on('httpUploadProgress', (p) => {
      if (p.part !== undefined) parts.add(p.part);
    });
    const done = await upload.done();
    assert.equal(done.Key, BIG_KEY);
    assert.equal(parts.size, 5, 'four full parts and a short last one');
    // A multipart object's ETag is "<md5 of the parts' md5s>-<number of parts>".
    assert.match(done.ETag ?? '', /^"[0-9a-f]{32}-5"$/);
    // The POSIX backend: the bucket is a directory, the object a file at its key's path.
    assert.equal(statSync(path.join(s3.dataDir, BUCKET, BIG_KEY)).size, BIG.length);
  });

  await t.test('lists by prefix', async () => {
    await c.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `${PREFIX}manifest.json`,
        Body: '{"parts":1}',
        ContentType: 'application/json',
      }),
    );
    await c.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'cluster-b/shard-0/dump-0001.rdb', Body: 'other cluster' }),
    );
    const listed = await c.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: PREFIX }));
    assert.deepEqual(
      listed.Contents?.map((o) => [o.Key, o.Size]),
      [
        [BIG_KEY, BIG.length],
        [`${PREFIX}manifest.json`, 11],
      ],
    );
    assert.equal(listed.KeyCount, 2);
    const top = await c.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/' }));
    assert.deepEqual(
      top.CommonPrefixes?.map((p) => p.Prefix),
      ['cluster-a/', 'cluster-b/'],
    );
  });

  await t.test('gets it back byte for byte (sha256)', async () => {
    const got = await c.send(new GetObjectCommand({ Bucket: BUCKET, Key: BIG_KEY }));
    assert.equal(got.ContentLength, BIG.length);
    const body = await got.Body?.transformToByteArray();
    assert.ok(body, 'a body');
    assert.equal(body.length, BIG.length);
    assert.equal(sha256(body), sha256(BIG));
    const range = await c.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: BIG_KEY, Range: `bytes=${PART_SIZE - 10}-${PART_SIZE + 9}` }),
    );
    assert.deepEqual(
      Buffer.from((await range.Body?.transformToByteArray()) ?? []),
      BIG.subarray(PART_SIZE - 10, PART_SIZE + 10),
    );
  });

  await t.test('deletes objects and the bucket', async () => {
    await c.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: BIG_KEY }));
    assert.deepEqual(await s3Error(c.send(new HeadObjectCommand({ Bucket: BUCKET, Key: BIG_KEY }))), {
      name: 'NotFound',
      status: 404,
    });
    assert.deepEqual(await s3Error(c.send(new GetObjectCommand({ Bucket: BUCKET, Key: BIG_KEY }))), {
      name: 'NoSuchKey',
      status: 404,
    });
    const left = await c.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: PREFIX }));
    assert.deepEqual(
      left.Contents?.map((o) => o.Key),
      [`${PREFIX}manifest.json`],
    );
    assert.deepEqual(await s3Error(c.send(new DeleteBucketCommand({ Bucket: BUCKET }))), {
      name: 'BucketNotEmpty',
      status: 409,
    });
    for (const Key of [`${PREFIX}manifest.json`, 'cluster-b/shard-0/dump-0001.rdb'])
      await c.send(new DeleteObjectCommand({ Bucket: BUCKET, Key }));
    await c.send(new DeleteBucketCommand({ Bucket: BUCKET }));
    assert.deepEqual(await s3Error(c.send(new HeadBucketCommand({ Bucket: BUCKET }))), {
      name: 'NotFound',
      status: 404,
    });
  });

  await t.test('refuses wrong credentials', async () => {
    const wrongSecret = client(s3, { accessKeyId: s3.accessKeyId, secretAccessKey: `${s3.secretAccessKey}x` });
    const unknownKey = client(s3, { accessKeyId: 'not-a-user', secretAccessKey: s3.secretAccessKey });
    t.after(() => {
      wrongSecret.destroy();
      unknownKey.destroy();
    });
    assert.deepEqual(await s3Error(wrongSecret.send(new ListBucketsCommand({}))), {
      name: 'SignatureDoesNotMatch',
      status: 403,
    });
    assert.deepEqual(await s3Error(wrongSecret.send(new CreateBucketCommand({ Bucket: 'intruder' }))), {
      name: 'SignatureDoesNotMatch',
      status: 403,
    });
    assert.deepEqual(await s3Error(unknownKey.send(new ListBucketsCommand({}))), {
      name: 'InvalidAccessKeyId',
      status: 403,
    });
    // Nothing was created by the refused calls.
    const { Buckets } = await c.send(new ListBucketsCommand({}));
    assert.deepEqual(Buckets ?? [], []);
  });
});
