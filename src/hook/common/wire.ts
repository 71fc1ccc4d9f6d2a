// The hook's wire format, written once: the JSON Metacontroller POSTs to the CompositeController's
// sync, finalize and customize hooks (hooks v1 and v2) and the JSON they answer. These TypeBox
// schemas are the request checks (wire-check.ts, run by parse.ts and by the fastify routes), the
// TypeScript types (Static) and the route schemas of src/server/hook-routes.ts.
// Invariants:
// - A request is refused only over what the hook cannot work without: the parent's name,
//   namespace and uid, the shape of the children/related maps, each object's apiVersion, kind,
//   name and namespace, and finalizing. A refusal stalls the parent (Metacontroller retries it
//   until someone steps in), so every other field is Unchecked: typed as Kubernetes declares it,
//   accepted as it comes, and read defensively by the hook (util.ts).
// - Responses go out exactly as the hook built them (AsBuilt): fastify's serializer writes only
//   the properties a schema declares, in declaration order, so declaring the fields of a child or
//   of the status would reorder or drop them. The top level is declared in full: status and
//   children are required (a response without children deletes every child) and no other key
//   is written (hooks v2 rejects unknown top-level fields).
// - `errorMessage` on a schema is what a refusal says after the field's path (wire-check.ts).
import { Type, type ObjectOptions, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import type { IPod } from 'kubernetes-models/v1/Pod';
import type { RedisStatus } from '../../api/schema.ts';

/** Kubernetes' ObjectMeta as kubernetes-models declares it (it exports the type only behind each kind). */
type KubernetesObjectMeta = NonNullable<IPod['metadata']>;

/** A field Kubernetes fills in whose value the hook never relies on: typed, not checked (see the header). */
function Unchecked<T>(description: string) {
  return Type.Optional(Type.Unsafe<T>(Type.Unknown({ description })));
}

/** An ObjectMeta field, typed as Kubernetes declares it and not checked. */
function MetaField<K extends keyof KubernetesObjectMeta>(_key: K, description: string) {
  return Unchecked<KubernetesObjectMeta[K]>(description);
}

/**
 * Any string key: Type.Record's default key pattern `^(.*)$` would let a key holding a line break
 * skip the check of its value. (Not an object with additionalProperties: TypeBox's compiler
 * names the key of nested ones alike, so a map of maps would check the wrong values.)
 */
const ANY_KEY = Type.String({ pattern: '^[\\s\\S]*$' });

function MapOf<T extends TSchema>(value: T, options: ObjectOptions = {}) {
  return Type.Record(ANY_KEY, value, options);
}

/** These properties, and any others (a Kubernetes object): the type keeps an index signature for the others. */
function Open<P extends TProperties>(properties: P, options: ObjectOptions = {}) {
  const schema = Type.Object(properties, options);
  return Type.Unsafe<Static<typeof schema> & { [field: string]: unknown }>(schema);
}

/** Serialized as built (see the header): any object on the wire, T in the hook. */
function AsBuilt<T>(description: string) {
  return Type.Unsafe<T>({ type: 'object', additionalProperties: true, description });
}

function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

const NON_EMPTY = 'must be a non-empty string';
const TYPE_MESSAGE = 'must be a string (every Kubernetes object has string apiVersion and kind)';

export const ObjectMeta = Type.Object(
  {
    name: Type.String({ description: "The object's name: how the hook finds its own children." }),
    namespace: Type.Optional(
      Type.String({ description: 'Absent on cluster-scoped objects; objects of another namespace are ignored.' }),
    ),
    uid: MetaField('uid', 'Not read on children and related objects.'),
    generation: MetaField('generation', 'Compared with status.observedGeneration while finalizing.'),
    resourceVersion: MetaField('resourceVersion', 'Not read.'),
    creationTimestamp: MetaField(
      'creationTimestamp',
      'Parents and related parents of the other kind: the older of two whose children would share names keeps them.',
    ),
    deletionTimestamp: MetaField('deletionTimestamp', 'Set while the object is being deleted.'),
    labels: MetaField('labels', 'Pods and PVCs: the pod selector labels; pods: the role label.'),
    annotations: MetaField(
      'annotations',
      "Pods: the link annotation; children: Metacontroller's last-applied configuration.",
    ),
    finalizers: MetaField('finalizers', 'Not read.'),
    ownerReferences: MetaField('ownerReferences', 'PVCs: whether a StatefulSet still owns them.'),
  },
  { description: 'Kubernetes ObjectMeta: name and namespace are checked, the rest is read defensively.' },
);

export const KubeObject = Open(
  {
    apiVersion: Type.String({ errorMessage: TYPE_MESSAGE }),
    kind: Type.String({ errorMessage: TYPE_MESSAGE }),
    metadata: ObjectMeta,
  },
  { description: 'Any Kubernetes object as the API server returns it; the fields beyond these are read defensively.' },
);

/**
 * Metacontroller's children/related map: outer key `Kind.version` or `Kind.group/version`, inner
 * key the bare name (hook v1) or `namespace/name` (hook v2). Read it by iterating values only.
 */
export const ObjectMap = MapOf(MapOf(KubeObject, { errorMessage: 'must be an object' }), {
  errorMessage: 'must be an object (a map of maps)',
  description:
    'Kind.group/version -> key -> object; one (possibly empty) entry per declared child or related resource.',
});

export const ParentMeta = Type.Object(
  {
    ...ObjectMeta.properties,
    name: Type.String({ minLength: 1, errorMessage: NON_EMPTY }),
    namespace: Type.String({
      minLength: 1,
      errorMessage: NON_EMPTY,
      description: 'Redis is namespaced: its children live here.',
    }),
    uid: Type.Optional(
      Type.String({
        minLength: 1,
        errorMessage: `${NON_EMPTY} (children are selected by controller-uid)`,
        description: "Becomes the controller-uid label of every child (Metacontroller's generateSelector).",
      }),
    ),
  },
  { description: "The parent's identity: checked, since every child is named and labelled from it." },
);

export const Parent = Type.Object(
  {
    apiVersion: Unchecked<string>('Not read.'),
    kind: Unchecked<string>(
      'Read by the monitoring decorator only: a RedisCluster gets the cluster objects, anything else the Redis ones.',
    ),
    metadata: ParentMeta,
    spec: Type.Optional(
      Type.Unknown({
        description: 'Judged by validateSpec: an invalid spec is a 200 reporting InvalidSpec, never a refusal.',
      }),
    ),
    status: Type.Optional(
      Type.Unknown({ description: 'The status last written, read defensively for condition times.' }),
    ),
  },
  {
    errorMessage: 'must be an object (is this a Metacontroller hook request?)',
    description: 'The Redis being synced.',
  },
);

const controller = Type.Optional(Type.Unknown({ description: 'The whole CompositeController; not read.' }));
const finalizingDescription = 'true only when the parent is being deleted (the finalize call).';

/** A sync or finalize request as the hook sees it: all five keys, as Metacontroller always sends them. */
export const HookRequest = Type.Object(
  {
    controller,
    parent: Parent,
    children: ObjectMap,
    related: ObjectMap,
    finalizing: Type.Boolean({ description: finalizingDescription }),
  },
  { errorMessage: 'must be a JSON object' },
);

/**
 * A sync or finalize request body as accepted: a missing or null map counts as empty and a
 * missing finalizing as false (hookRequestOf fills them in), so a request written by hand for
 * curl or a test needs only the parent.
 */
export const HookRequestBody = Type.Object(
  {
    controller,
    parent: Parent,
    children: Type.Optional(Nullable(ObjectMap)),
    related: Type.Optional(Nullable(ObjectMap)),
    finalizing: Type.Optional(Type.Boolean({ description: finalizingDescription })),
  },
  { errorMessage: 'must be a JSON object' },
);

export const CustomizeRequest = Type.Object({ controller, parent: Parent }, { errorMessage: 'must be a JSON object' });

export const HookResponse = Type.Object(
  {
    status: AsBuilt<RedisStatus>(
      "Replaces the parent's whole status (a Redis's, or a RedisBackup's: see RedisBackupResponse). Never carries observedGeneration (Metacontroller writes it).",
    ),
    children: Type.Array(AsBuilt<KubeObject>('A complete object: apiVersion, kind, metadata and the rest.'), {
      description: 'The complete desired set: every observed child missing here is deleted by Metacontroller.',
    }),
    resyncAfterSeconds: Type.Optional(
      Type.Number({ description: 'Sync this parent again after this long (finalize polls with it).' }),
    ),
    finalized: Type.Optional(
      Type.Boolean({ description: 'Only in finalize answers; true only when the request had finalizing: true.' }),
    ),
  },
  { additionalProperties: false },
);

/** Metacontroller's ResourceRule. `names` and `labelSelector` are never combined. */
export const RelatedResourceRule = Type.Object({
  apiVersion: Type.String(),
  resource: Type.String({ description: 'The plural resource name, for example pods.' }),
  namespace: Type.Optional(Type.String()),
  names: Type.Optional(Type.Array(Type.String())),
  labelSelector: Type.Optional(Type.Object({ matchLabels: MapOf(Type.String()) })),
});

export const CustomizeResponse = Type.Object(
  { relatedResources: Type.Array(AsBuilt<RelatedResourceRule>('A ResourceRule (RelatedResourceRule).')) },
  { additionalProperties: false },
);

/**
 * A DecoratorController sync request (the monitoring component's, routes /monitoring/*): the
 * target Redis as `object`, what was attached to it as `attachments`. As with HookRequestBody a
 * missing or null map counts as empty and a missing finalizing as false.
 */
export const DecoratorRequestBody = Type.Object(
  {
    controller: Type.Optional(Type.Unknown({ description: 'The whole DecoratorController; not read.' })),
    object: Parent,
    attachments: Type.Optional(Nullable(ObjectMap)),
    related: Type.Optional(Nullable(ObjectMap)),
    finalizing: Type.Optional(
      Type.Boolean({ description: 'Not sent: the monitoring DecoratorController has no finalize hook.' }),
    ),
  },
  { errorMessage: 'must be a JSON object' },
);

/**
 * Only attachments: a decorator's answer may also set the target's labels, annotations and
 * status, and this one never does (the status is the CompositeController's; an absent status
 * leaves it as it is). Every observed attachment missing here is deleted by Metacontroller.
 */
export const DecoratorResponse = Type.Object(
  {
    attachments: Type.Array(AsBuilt<KubeObject>('A complete object: apiVersion, kind, metadata and the rest.'), {
      description: 'The complete desired set of attachments.',
    }),
    resyncAfterSeconds: Type.Optional(Type.Number({ description: 'Not used.' })),
  },
  { additionalProperties: false },
);

export type ObjectMeta = Static<typeof ObjectMeta>;
export type KubeObject = Static<typeof KubeObject>;
export type ObjectMap = Static<typeof ObjectMap>;
export type Parent = Static<typeof Parent>;
export type HookRequest = Static<typeof HookRequest>;
export type HookRequestBody = Static<typeof HookRequestBody>;
export type CustomizeRequest = Static<typeof CustomizeRequest>;
export type HookResponse = Static<typeof HookResponse>;
export type RelatedResourceRule = Static<typeof RelatedResourceRule>;
export type CustomizeResponse = Static<typeof CustomizeResponse>;
export type DecoratorRequestBody = Static<typeof DecoratorRequestBody>;
export type DecoratorResponse = Static<typeof DecoratorResponse>;
/** A decorator request as the hook sees it: both maps present, finalizing decided. */
export type DecoratorRequest = {
  controller?: unknown;
  object: Parent;
  attachments: ObjectMap;
  related: ObjectMap;
  finalizing: boolean;
};
