// Validation of a RedisCluster spec as the hook sees it, like validate.ts for Redis: the schema the
// API server enforces (ajv, defaults filled in, an unset version resolved by engine) plus the
// checks the API server makes with CEL and the ones only a hook can make (the name length the
// child names need, label keys and values the StatefulSets would carry), re-done here because a
// CRD may be installed without them.
// Invariant: never throws and never mutates its input; every failure names the field.
import { MAX_REDIS_CLUSTER_NAME_LENGTH } from './rediscluster-names.ts';
import { nestingProblem } from './depth.ts';
import { RedisClusterSpec, type RedisClusterSpec as RedisClusterSpecT } from './rediscluster-schema.ts';
import { combinationProblems, resolvedVersion } from './engine.ts';
import { compileSpecSchema, printableFields, schemaProblems, type SpecProblem } from './validate.ts';
import {
  backupProblems,
  configProblems,
  directiveProblems,
  monitoringProblems,
  nameProblems,
  nodeSelectorProblems,
  podTemplateProblems,
} from './validate-fields.ts';

const validateRedisClusterSchema = compileSpecSchema<RedisClusterSpecT>(RedisClusterSpec);

export type RedisClusterSpecVerdict = { ok: true; spec: RedisClusterSpecT } | { ok: false; problems: SpecProblem[] };

function semanticProblems(name: string, spec: RedisClusterSpecT, givenVersion: string | undefined): SpecProblem[] {
  const problems: SpecProblem[] = [];
  problems.push(...nameProblems(name));
  if (name.length > MAX_REDIS_CLUSTER_NAME_LENGTH) {
    problems.push({
      field: 'metadata.name',
      message: `must be at most ${MAX_REDIS_CLUSTER_NAME_LENGTH} characters so the shard StatefulSets, their backup CronJobs and their pods' labels stay within Kubernetes limits`,
    });
  }
  // The version as written: an unset one is the engine's default, named by the engine field.
  problems.push(...combinationProblems(spec.engine, givenVersion));
  problems.push(...configProblems(spec.config, 'RedisCluster'));
  problems.push(...nodeSelectorProblems(spec.nodeSelector));
  // The CEL rule on autoscaling, mirrored.
  if (spec.autoscaling.minReplicas > spec.autoscaling.maxReplicas) {
    problems.push({
      field: 'spec.autoscaling.minReplicas',
      message: `${spec.autoscaling.minReplicas} must not exceed autoscaling.maxReplicas (${spec.autoscaling.maxReplicas})`,
    });
  }
  problems.push(...backupProblems(spec));
  problems.push(...monitoringProblems(spec.monitoring));
  problems.push(...podTemplateProblems(spec));
  return problems;
}

/**
 * Validates `spec` of the RedisCluster called `name`. On success returns a defaulted deep copy;
 * the input is left untouched so the caller can still echo what it observed.
 */
export function validateRedisClusterSpec(name: string, spec: unknown): RedisClusterSpecVerdict {
  if (spec === undefined || spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    return { ok: false, problems: [{ field: 'spec', message: 'must be an object' }] };
  }
  const tooDeep = nestingProblem(spec); // before anything recursive walks it
  if (tooDeep !== undefined) return { ok: false, problems: [tooDeep] };
  const copy = structuredClone(spec) as unknown;
  if (!validateRedisClusterSchema(copy))
    return {
      ok: false,
      problems: printableFields([
        ...schemaProblems(validateRedisClusterSchema.errors),
        ...directiveProblems(copy, 'RedisCluster'),
      ]),
    };
  const given = copy as Omit<RedisClusterSpecT, 'version'> & { version?: string };
  const resolved: RedisClusterSpecT = { ...given, version: resolvedVersion(given.engine, given.version) };
  const problems = semanticProblems(name, resolved, given.version);
  return problems.length > 0 ? { ok: false, problems: printableFields(problems) } : { ok: true, spec: resolved };
}
