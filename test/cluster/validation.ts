// What a real API server does to a write between decoding and storage, plugged into the
// kube-api stand-in through addMutator/addValidator (`installValidation(store)`):
// - Built-in kinds: unknown fields are dropped (the server's default fieldValidation=Warn; or
//   refused with `unknownFields: 'strict'`), a JSON type that cannot decode is a 400 BadRequest,
//   the server's defaults are filled in (the subset that matters for a three-way merge: pod
//   template, StatefulSet, Service with an allocated clusterIP), then the object is checked
//   against Kubernetes' own schema (kubernetes-models) and the per-kind rules we depend on,
//   including immutable fields on update (StatefulSet spec, Service clusterIP, Pod spec).
// - Our Redis: pruned and defaulted by the CRD's structural schema (manifests/crd.yaml, the file
//   that gets installed), validated with ajv, and its x-kubernetes-validations CEL rules
//   evaluated (transition rules only on update, where the old value exists).
// Every refusal is the stand-in's KubeApiError: 422 Invalid with causes in the server's
// wording, or 400 for a decode error.
// Invariants: mutators and validators are pure functions of (object, oldObject) plus the
// clusterIP allocator; a write that changes nothing after defaulting stays a no-op (and does
// not bump metadata.generation), as on a real server.
// The parts live in validation/: causes.ts (the server's wording), builtin-decode.ts (pruning,
// decoding and defaults of built-in kinds), builtin-rules.ts (their validation), crd.ts (our CRD);
// this file wires them into a store and re-exports what tests use.
import type { ErrorObject } from 'ajv';
import { applyDefaults } from '../../src/api/crd.ts';
import { GROUP, KIND, VERSION } from '../../src/api/labels.ts';
import { errors, type StatusCause } from '../support/kube-api/errors.ts';
import { deepEqual } from '../support/kube-api/patch.ts';
import { apiVersionOf, type KubeObject, type ResourceDef, type StoredObject, type ValidationContext } from '../support/kube-api/resources.ts';
import type { ObjectStore } from '../support/kube-api/store.ts';
import {
  BUILTIN,
  ClusterIpAllocator,
  decodeProblems,
  defaultPod,
  defaultPvc,
  defaultService,
  defaultStatefulSet,
  pruneUnknown,
} from './validation/builtin-decode.ts';
import {
  configMapProblems,
  pdbProblems,
  podSpecProblems,
  podUpdateProblems,
  schemaProblems,
  serviceProblems,
  statefulSetProblems,
  statefulSetUpdateProblems,
} from './validation/builtin-rules.ts';
import { fieldPath, jsonTypeOf, openApiCause, segments, valueAt, type Json } from './validation/causes.ts';
import { celCauses, compileCrd, loadCrdSchema, pruneBySchema } from './validation/crd.ts';

export { fieldPath, openApiCause } from './validation/causes.ts';
export { defaultPodSpec, pruneUnknown } from './validation/builtin-decode.ts';
export { podSpecProblems, statefulSetUpdateProblems } from './validation/builtin-rules.ts';
export { celCauses, loadCrdSchema, pruneBySchema } from './validation/crd.ts';

export interface ValidationOptions {
  /** Unknown fields of built-in kinds: dropped (`prune`, the server default) or refused (`strict`, fieldValidation=Strict). */
  unknownFields?: 'prune' | 'strict';
  /** Fill the API server's defaults into built-in kinds (default true). */
  builtinDefaults?: boolean;
  /** The CRD file to enforce (default manifests/crd.yaml). */
  crdPath?: string | URL;
  /** Our other CRDs the store serves, validated and defaulted alike: kind -> CRD file (e.g. RedisCluster). */
  extraCrds?: Record<string, string | URL>;
}

export interface InstalledValidation {
  /** Removes every hook this installed. */
  uninstall(): void;
}

// ------------------------------------------------------------------ wiring

function builtinKey(def: ResourceDef): string {
  return `${apiVersionOf(def)}/${def.kind}`;
}

/** What a decode error says for a JSON value of the wrong type. */
function decodeError(def: ResourceDef, obj: StoredObject, problem: ErrorObject) {
  const parts = segments(problem.instancePath, obj);
  const value = valueAt(obj, parts);
  return errors.badRequest(
    `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: json: cannot unmarshal ${jsonTypeOf(value) === 'integer' ? 'number' : jsonTypeOf(value)} into Go struct field ${def.kind}.${fieldPath(parts)} of type ${String((problem.params as Json)['type'])}`,
  );
}

/** metadata.generation counts spec changes after defaulting (the store counted before our mutators ran). */
function fixGeneration(ctx: ValidationContext): void {
  const old = ctx.oldObject;
  if (!ctx.resource.generation || old === undefined) return;
  const specOf = (o: KubeObject) => {
    const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o;
    return rest;
  };
  const meta = ctx.object.metadata;
  if (deepEqual(specOf(old), specOf(ctx.object))) {
    if (old.metadata.generation === undefined) delete meta.generation;
    else meta.generation = old.metadata.generation;
  } else meta.generation = (old.metadata.generation ?? 0) + 1;
}

export function installValidation(store: ObjectStore, options: ValidationOptions = {}): InstalledValidation {
  const removers: Array<() => void> = [];
  const strict = options.unknownFields === 'strict';
  const withDefaults = options.builtinDefaults ?? true;
  const ips = new ClusterIpAllocator();
  // Our CRDs by group/version/kind: the Redis one, and any other of ours (extraCrds: kind -> file).
  const crds = new Map([[`${GROUP}/${VERSION}/${KIND}`, compileCrd(loadCrdSchema(options.crdPath))]]);
  for (const [kind, path] of Object.entries(options.extraCrds ?? {})) crds.set(`${GROUP}/${VERSION}/${kind}`, compileCrd(loadCrdSchema(path, kind)));

  for (const def of store.resources.all) {
    const key = builtinKey(def);
    const crd = crds.get(key);
    if (crd !== undefined) {
      removers.push(
        store.addMutator(def, (ctx) => {
          pruneBySchema(crd.schema, ctx.object);
          // Structural defaulting of the whole object (it only adds missing fields).
          const defaulted = applyDefaults(crd.schema, ctx.object) as StoredObject;
          for (const k of Object.keys(ctx.object)) delete (ctx.object as Json)[k];
          Object.assign(ctx.object, defaulted);
          fixGeneration(ctx);
        }),
        store.addValidator(def, (ctx) => {
          const causes: StatusCause[] = [];
          if (!crd.validate(ctx.object)) causes.push(...(crd.validate.errors ?? []).map((e) => openApiCause(e, ctx.object)));
          causes.push(...celCauses(crd.schema, ctx.object, ctx.operation === 'UPDATE' ? ctx.oldObject : undefined));
          return causes;
        }),
      );
      continue;
    }
    const info = BUILTIN[key];
    if (info === undefined) continue;
    removers.push(
      store.addMutator(def, (ctx) => {
        const unknown = pruneUnknown(ctx.object, info.typeName);
        if (strict && unknown.length > 0) {
          throw errors.badRequest(
            `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`,
          );
        }
        const typeError = decodeProblems(ctx.object, info).find((e) => e.keyword === 'type');
        if (typeError !== undefined) throw decodeError(def, ctx.object, typeError);
        if (withDefaults) {
          const o = ctx.object as Json;
          if (key === 'apps/v1/StatefulSet') defaultStatefulSet(o);
          else if (key === 'v1/Service') defaultService(o, ctx.oldObject, ips);
          else if (key === 'v1/Pod') defaultPod(o);
          else if (key === 'v1/PersistentVolumeClaim') defaultPvc(o);
        }
        fixGeneration(ctx);
      }),
      store.addValidator(def, (ctx) => {
        const causes = schemaProblems(ctx.object, info);
        const old = ctx.operation === 'UPDATE' ? ctx.oldObject : undefined;
        switch (key) {
          case 'apps/v1/StatefulSet':
            causes.push(...statefulSetProblems(ctx.object));
            if (old !== undefined && ctx.subresource !== 'status') causes.push(...statefulSetUpdateProblems(ctx.object, old));
            break;
          case 'v1/Service':
            causes.push(...serviceProblems(ctx.object, old));
            break;
          case 'v1/Pod':
            causes.push(...podSpecProblems(ctx.object['spec'], 'spec'));
            if (old !== undefined && ctx.subresource !== 'status') causes.push(...podUpdateProblems(ctx.object, old));
            break;
          case 'policy/v1/PodDisruptionBudget':
            causes.push(...pdbProblems(ctx.object));
            break;
          case 'v1/ConfigMap':
            causes.push(...configMapProblems(ctx.object));
            break;
        }
        return causes;
      }),
    );
  }
  return {
    uninstall: () => {
      for (const remove of removers.splice(0)) remove();
    },
  };
}
