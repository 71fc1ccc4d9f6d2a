// What the status says about a Redis's (or RedisCluster's) Secrets, from the sidecar's report on
// the parent (api/secret-report.ts's annotation): the hook never sees a Secret itself (the
// customize hook asks for none, so no value crosses plain HTTP). Pure.
// Invariants:
// - No report, an unreadable one, or one that does not cover a Secret yet: that Secret is "not
//   checked yet" (SecretsReady Unknown), never "missing".
// - The report is only believed for status: status.secrets lists only Secrets the spec names, and
//   a message names a Secret and a key, never a value (the report holds none).
import {
  parseSecretReport,
  SECRETS_ANNOTATION,
  type ReportedSecret,
  type SecretRole,
  type SecretUse,
} from '../../api/secret-report.ts';
import { compare, isRecord } from './util.ts';

/** A Secret that keeps pods from starting: Ready's reason while no master is ready. */
export interface SecretProblem {
  reason: 'AuthSecretMissing' | 'TLSSecretMissing' | 'PasswordUnwritable';
  message: string;
}

export interface SecretsCondition {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export interface SecretsView {
  /** status.secrets: the named Secrets found, with their resourceVersions, by name; undefined before any report. */
  secrets: Array<{ name: string; resourceVersion: string }> | undefined;
  /** The first problem with a password or certificate Secret (what the pods need to start). */
  problem: SecretProblem | undefined;
  /** The S3 credentials' problem (the backup status says it). */
  storage: string | undefined;
  /** The SecretsReady condition. */
  condition: SecretsCondition;
}

export const SECRETS_CONDITION = 'SecretsReady';

const MISSING_REASON: Record<SecretRole, string> = {
  auth: 'AuthSecretMissing',
  operator: 'AuthSecretMissing',
  tls: 'TLSSecretMissing',
  user: 'UserSecretMissing',
  s3: 'S3SecretMissing',
};

interface Finding {
  use: SecretUse;
  reason: string;
  message: string;
}

function findings(namespace: string, use: SecretUse, entry: ReportedSecret): Finding[] {
  if ('missing' in entry)
    return [
      {
        use,
        reason: MISSING_REASON[use.role],
        message: `Secret ${use.name} not found${use.origin}; ${use.consequence}`,
      },
    ];
  const absent = use.keys.filter((k) => !entry.keys.includes(k));
  if (absent.length > 0)
    return [
      {
        use,
        reason: MISSING_REASON[use.role],
        message: `Secret ${use.name} has no key ${absent.join(', ')}; ${use.consequence}`,
      },
    ];
  if (!use.password) return [];
  return use.keys
    .filter((k) => entry.unwritable.includes(k))
    .map((k) => ({
      use,
      reason: 'PasswordUnwritable',
      message: `Secret ${namespace}/${use.name} key ${k} is empty or holds a control character; Redis cannot be given it safely`,
    }));
}

/** The status's view of the Secrets `uses` names, from the parent's annotations (anything). */
export function secretsView(namespace: string, uses: readonly SecretUse[], annotations: unknown): SecretsView {
  const raw =
    isRecord(annotations) && Object.hasOwn(annotations, SECRETS_ANNOTATION)
      ? annotations[SECRETS_ANNOTATION]
      : undefined;
  const report = parseSecretReport(raw);
  if (report === undefined) {
    return {
      secrets: undefined,
      problem: undefined,
      storage: undefined,
      condition: {
        status: 'Unknown',
        reason: 'SecretsNotChecked',
        message: `the Secrets are not checked yet: the sidecar's report (annotation ${SECRETS_ANNOTATION}) is ${raw === undefined ? 'not there yet' : 'unreadable'}`,
      },
    };
  }
  const found: Finding[] = [];
  const unchecked: string[] = [];
  const versions = new Map<string, string>();
  for (const use of uses) {
    const entry = report.get(use.name);
    if (entry === undefined) {
      if (!unchecked.includes(use.name)) unchecked.push(use.name);
      continue;
    }
    if (!('missing' in entry)) versions.set(use.name, entry.resourceVersion);
    found.push(...findings(namespace, use, entry));
  }
  const pods = found.find((f) => f.use.role === 'auth' || f.use.role === 'operator' || f.use.role === 'tls');
  const storage = found.find((f) => f.use.role === 's3');
  let condition: SecretsCondition;
  if (found.length > 0)
    condition = { status: 'False', reason: found[0]!.reason, message: found.map((f) => f.message).join('; ') };
  else if (unchecked.length > 0)
    condition = {
      status: 'Unknown',
      reason: 'SecretsNotChecked',
      message: `Secret ${unchecked.join(', ')} not checked yet: the sidecar has not reported on it`,
    };
  else
    condition = {
      status: 'True',
      reason: 'SecretsFound',
      message: `${versions.size} Secret(s) found with every key the spec names; every password can be given to Redis`,
    };
  return {
    secrets: [...versions.keys()].sort(compare).map((name) => ({ name, resourceVersion: versions.get(name)! })),
    problem: pods === undefined ? undefined : { reason: pods.reason as SecretProblem['reason'], message: pods.message },
    storage: storage?.message,
    condition,
  };
}

/** SecretsReady while the spec is invalid: which Secrets it names is not known. */
export const INVALID_SPEC_SECRETS: SecretsCondition = {
  status: 'Unknown',
  reason: 'InvalidSpec',
  message: 'which Secrets are needed is not known while the spec is invalid',
};
