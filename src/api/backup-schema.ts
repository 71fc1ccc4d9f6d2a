// The backup parts of the Redis API: scheduled backups (spec.backup), where they go
// (S3 or a PersistentVolumeClaim), a new Redis started from one (spec.restore), and what status
// says about them. Part of the one schema source (schema.ts composes them into RedisSpec and
// RedisStatus; redisbackup-schema.ts reuses BackupStorage for the on-demand kind); the same
// invariants hold: every property described, defaults here and only here, structural output.
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from './typebox-helpers.ts';

/**
 * A five-field cron line as the CronJob controller takes it (minute hour day-of-month month
 * day-of-week; numbers, ranges, steps, lists, month and weekday names) or a descriptor. The
 * pattern catches the shape; cron.ts checks the ranges and the hook reports the field.
 */
export const BACKUP_SCHEDULE_PATTERN =
  '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^\\s]+( [^\\s]+){4})$';

/** A bucket name's structure (the pattern gives the characters): DNS-like labels, not an IP address. */
const BUCKET_RULE = `!self.contains('..') && !self.contains('.-') && !self.contains('-.') && !self.matches('^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$')`;
const BUCKET_MESSAGE = 'bucket must be an S3 bucket name: no "..", ".-" or "-.", not an IP address';
/** A relative path: no leading "/", no "//", no "." or ".." segment (backup-validate.ts says why, naming the field). */
const SEGMENTS_RULE = `!self.startsWith('/') && !self.contains('//') && !self.matches('(^|/)[.][.]?(/|$)')`;
/**
 * s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb, by characters; the other rules and
 * backup-validate.ts check the structure. CEL rules rather than patterns here, so that the hook's
 * own check (which runs only once the schema passes) gives the message, naming what is wrong.
 */
const LOCATION_PATTERN =
  '^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]|pvc://[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)/([A-Za-z0-9._~/-]*/)?[A-Za-z0-9._~-]+[.]rdb$';

const SecretKey = (defaultKey: string, what: string) =>
  Type.String({ default: defaultKey, minLength: 1, maxLength: 253, description: `Key of ${what} inside the Secret.` });

export const S3Storage = Type.Object(
  {
    bucket: Type.String({
      minLength: 3,
      maxLength: 63,
      pattern: '^[a-z0-9][a-z0-9.-]*[a-z0-9]$',
      description:
        'The bucket (it must exist): an S3 bucket name (3-63 lower-case letters, digits, "." and "-"; no "..", ".-" or "-."; not an IP address).',
      'x-kubernetes-validations': [{ rule: BUCKET_RULE, message: BUCKET_MESSAGE }],
    }),
    region: Type.String({ minLength: 1, maxLength: 64, description: 'The bucket region, for example us-east-1.' }),
    endpoint: Type.Optional(
      Type.String({
        pattern: '^https?://[^/\\s]+(/.*)?$',
        maxLength: 512,
        description:
          'An S3-compatible server instead of AWS, for example http://minio.storage:9000 (path-style addressing is used then).',
      }),
    ),
    prefix: Type.String({
      default: '',
      maxLength: 256,
      description: `Key prefix inside the bucket (letters, digits, ".", "_", "-" and "/"; no leading "/", no empty, "." or ".." segment); a Redis's backups go to <prefix>redis~<namespace>~<name>/<time>-<offset>.rdb, a RedisCluster shard's to <prefix>rediscluster~<namespace>~<name>~shard-<i>/.`,
      'x-kubernetes-validations': [
        {
          rule: `self.matches('^[A-Za-z0-9._/-]*$')`,
          message: 'prefix may only use letters, digits, ".", "_", "-" and "/"',
        },
        { rule: SEGMENTS_RULE, message: 'prefix must be relative: no leading "/", no empty, "." or ".." segment' },
      ],
    }),
    credentialsSecret: Type.Optional(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 253, description: 'A Secret in the Redis namespace.' }),
          accessKeyIdKey: SecretKey('AWS_ACCESS_KEY_ID', 'the access key id'),
          secretAccessKeyKey: SecretKey('AWS_SECRET_ACCESS_KEY', 'the secret access key'),
        },
        {
          description:
            "The access key. When unset, the AWS SDK's default chain is used (for example IRSA or an instance role on the backup pods).",
        },
      ),
    ),
  },
  { description: 'An S3 bucket (AWS or any S3-compatible server).' },
);

export const PvcStorage = Type.Object(
  {
    claimName: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
      description: 'An existing PersistentVolumeClaim in the Redis namespace.',
    }),
  },
  {
    description:
      'A PersistentVolumeClaim, for clusters without object storage. Backups go to redis~<namespace>~<name>/<time>-<offset>.rdb on it. The claim must be mountable by the backup pods while the Redis runs (ReadWriteMany, or ReadWriteOnce on one node).',
  },
);

/** Where backups are: exactly one of s3 or pvc (a function, so each use carries its own description). */
export function storageSchema(description: string) {
  return Type.Object(
    { s3: Type.Optional(S3Storage), pvc: Type.Optional(PvcStorage) },
    {
      description,
      'x-kubernetes-validations': [
        { rule: 'has(self.s3) != has(self.pvc)', message: 'storage needs exactly one of s3 or pvc' },
      ],
    },
  );
}

export const BackupStorage = storageSchema('Where backups are stored: exactly one of s3 or pvc.');

/** A backup schedule field (the same rules wherever one is taken). */
const scheduleSchema = (description: string) =>
  Type.String({ pattern: BACKUP_SCHEDULE_PATTERN, maxLength: 128, description });
const SCHEDULE_FORMS =
  'a CronJob schedule in the controller\'s time zone: five fields (minute hour day-of-month month day-of-week, for example "0 */6 * * *") or @hourly, @daily, @weekly, @monthly, @yearly';

/** What scheduled and on-demand backups share: how many are kept and where they go. */
const backupFields = {
  retention: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 36500,
      description:
        'Days a backup is kept (the article\'s "retention: 7" is seven days). Older backups are removed after each successful backup; the newest is never removed. With retentionCount too, a backup goes only when both allow it.',
    }),
  ),
  retentionCount: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 10000,
      description: 'How many backups are kept, the newest first (alone, or with retention: see there).',
    }),
  ),
  suspend: Type.Boolean({
    default: false,
    description: 'true pauses scheduled backups (on-demand RedisBackups still run).',
  }),
  storage: BackupStorage,
};

/**
 * A Redis's spec.backup: storage alone is enough for on-demand backups (RedisBackup, kubectl redis
 * backup); a schedule adds the CronJob.
 */
export const BackupSpec = Type.Object(
  {
    schedule: Type.Optional(
      scheduleSchema(
        `When to back up, as ${SCHEDULE_FORMS}. Unset: no scheduled backups (no CronJob); on-demand RedisBackups still go to storage.`,
      ),
    ),
    ...backupFields,
  },
  {
    description:
      'Backups: a consistent RDB snapshot read from a replica (from the master only when there is no replica: the master never forks for it), stored off the Redis pods. storage is where every backup goes, on-demand RedisBackups included; with a schedule, the CronJob <name>-backup takes them on that schedule. status.backup and the BackupHealthy condition report them.',
  },
);

/**
 * A RedisCluster's spec.backup: the schedule is required, since a RedisCluster has no on-demand
 * backups (a RedisBackup names a Redis): without one, spec.backup would do nothing.
 */
export const ScheduledBackupSpec = Type.Object(
  { schedule: scheduleSchema(`When to back up, as ${SCHEDULE_FORMS}.`), ...backupFields },
  { description: 'Scheduled backups.' },
);

export const RestoreSpec = Type.Object(
  {
    backup: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: 'A completed RedisBackup in the same namespace.' }),
    ),
    location: Type.Optional(
      Type.String({
        maxLength: 1024,
        description:
          'A backup by location: s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb (as status.backup.lastSuccessful.location shows it). The key or path: letters, digits, ".", "_", "-", "~" and "/", no leading "/", no empty, "." or ".." segment.',
        'x-kubernetes-validations': [
          {
            rule: `self.matches('${LOCATION_PATTERN}')`,
            message:
              'location must be s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb, the key or path of letters, digits, ".", "_", "-", "~" and "/"',
          },
          {
            rule: `!self.matches('^[a-z0-9]+://[^/]*/(.*/)?(/|[.][.]?(/|$))')`,
            message: 'location must not have an empty, "." or ".." path segment',
          },
          {
            rule: `!self.matches('^[a-z0-9]+://[^/]*([.][.]|[.]-|-[.])') && !self.matches('^s3://[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+/')`,
            message:
              'location: the bucket or claim must be a valid name (no "..", ".-" or "-."; a bucket is not an IP address)',
          },
        ],
      }),
    ),
    storage: Type.Optional(
      storageSchema(
        "How to reach the backup (region, endpoint, credentials; bucket or claim as in the location). Defaults to the RedisBackup's recorded storage, then to spec.backup.storage.",
      ),
    ),
  },
  {
    description:
      'Start this Redis from a backup: every pod loads it before Redis starts (RDB or AOF persistence alike). Honoured only when the Redis is created, and only into empty data volumes: it never overwrites data, so while claims of an earlier Redis of the same name exist (persistence.whenDeleted: Retain keeps them) nothing is created. Set at creation; cannot change afterwards.',
    'x-kubernetes-validations': [
      { rule: 'has(self.backup) != has(self.location)', message: 'restore needs exactly one of backup or location' },
    ],
  },
);

export const BackupResult = Type.Object(
  {
    location: Type.String({ description: 'Where the backup is: s3://<bucket>/<key> or pvc://<claim>/<path>.' }),
    sizeBytes: Type.Optional(Type.Integer({ description: 'Size of the RDB snapshot in bytes.' })),
    replicationOffset: Type.Optional(
      Type.Integer({ description: 'The replication offset the snapshot was taken at.' }),
    ),
    redisVersion: Type.Optional(Type.String({ description: 'The version of the Redis it was read from.' })),
    time: Type.Optional(Type.String({ description: 'When the backup finished.' })),
  },
  { description: 'One stored backup.' },
);

export const BackupStatus = Type.Object(
  {
    lastSuccessful: Type.Optional(BackupResult),
    lastFailure: Type.Optional(
      Type.Object(
        {
          time: Type.Optional(Type.String({ description: 'When the failed run ended.' })),
          job: Type.String({ description: 'The Job that failed.' }),
          message: Type.String({ description: 'Why it failed, as the backup reported it.' }),
        },
        { description: 'The last backup run that failed, when it is newer than the last success.' },
      ),
    ),
    lastScheduleTime: Type.Optional(Type.String({ description: "The CronJob's last schedule time." })),
  },
  { description: 'Scheduled and on-demand backups of this Redis, from their Jobs and pods.' },
);

export const RestoreStatus = Type.Object(
  {
    source: Type.String({ description: 'What spec.restore named: RedisBackup/<name> or the location.' }),
    location: Type.Optional(Type.String({ description: 'The backup restored (or to restore).' })),
    storage: Type.Optional(
      storageSchema(
        'How the pods reach it, fixed once the source is known (so the pod template never changes afterwards).',
      ),
    ),
    phase: StringEnum(['Pending', 'Restoring', 'Completed', 'Failed'] as const, {
      description:
        'Pending (the source is not known yet, or claims of an earlier Redis of this name still exist: the message names them and how to delete them; Ready says RestoreRefused), Restoring, Completed (the master started from it, as its restore container reported) or Failed (the backup could not be restored, or the master started without it).',
    }),
    message: Type.String({ description: 'What a human needs to know.' }),
    decidedBy: Type.Optional(
      Type.String({
        description:
          'The pod that was master when the restore was settled for good (Completed, or Failed because it started without the backup): nothing restores again after that.',
      }),
    ),
  },
  { description: 'Where this Redis was restored from (spec.restore).' },
);

export type BackupSpec = Static<typeof BackupSpec>;
export type ScheduledBackupSpec = Static<typeof ScheduledBackupSpec>;
export type BackupStorage = Static<typeof BackupStorage>;
export type RestoreSpec = Static<typeof RestoreSpec>;
export type BackupStatus = Static<typeof BackupStatus>;
export type BackupResult = Static<typeof BackupResult>;
export type RestoreStatus = Static<typeof RestoreStatus>;
