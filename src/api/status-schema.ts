// The status of a Redis: what the hook and the sidecar observed, and the standard conditions.
// Part of the one schema source (crd.ts emits it as the status subresource's schema;
// rediscluster-schema.ts reuses its secrets, conditions and observedGeneration pieces); the same
// invariants hold (every property described, structural output: see schema.ts), and nothing in it
// is a default: status is only ever observed.
import { Type, type Static } from '@sinclair/typebox';
import { BackupStatus, RestoreStatus } from './backup-schema.ts';
import { StringEnum, StringMap } from './typebox-helpers.ts';

export const Condition = Type.Object(
  {
    type: Type.String({
      description:
        'Condition type: Ready, MasterAvailable, ReplicasInSync, SpecValid, Updated, Hibernated or BackupHealthy (with spec.backup).',
    }),
    status: StringEnum(['True', 'False', 'Unknown'] as const, { description: 'True, False or Unknown.' }),
    reason: Type.String({ description: 'One CamelCase word saying why.' }),
    message: Type.String({ description: 'What a human needs to know.' }),
    lastTransitionTime: Type.Optional(
      Type.String({
        description:
          'When the condition last changed, taken from what was observed (never a clock read in the hook); may be absent.',
      }),
    ),
  },
  { description: 'A standard Kubernetes condition.' },
);

// status.secrets, status.conditions and status.observedGeneration are the same in both kinds' status
// but for the kind's name and the descriptions; separate pieces, since the kinds order them apart.

/** status.secrets: the Secrets the kind uses, as the sidecar reports them. */
export function SecretsStatus(kind: 'Redis' | 'RedisCluster', description: string) {
  return Type.Optional(
    Type.Array(
      Type.Object(
        {
          name: Type.String({ description: 'The Secret name.' }),
          resourceVersion: Type.String({ description: "The Secret's resourceVersion as the sidecar last read it." }),
        },
        { description: `One Secret this ${kind} uses.` },
      ),
      {
        description,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      },
    ),
  );
}

/** status.nodes: the engine and version each pod's node answers with, as the sidecar reports them. */
export function NodesStatus(kind: 'Redis' | 'RedisCluster') {
  return Type.Optional(
    Type.Array(
      Type.Object(
        {
          pod: Type.String({ description: 'The pod name.' }),
          engine: Type.String({ description: 'The engine its node answers as: redis or valkey (INFO server).' }),
          version: Type.String({
            description: "The engine's own version (valkey_version on Valkey, which still says redis_version 7.2.4).",
          }),
        },
        { description: `One pod of this ${kind} and what runs in it.` },
      ),
      {
        description: `The engine and version each pod of this ${kind} actually runs, sorted by pod, as the sidecar read them from INFO server (annotation redis.example.com/running-engine on the pod). A pod appears once its node answered; absent until one did.`,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['pod'],
      },
    ),
  );
}

/** status.conditions: a map list keyed by type; the description names the kind's condition types. */
export function ConditionsStatus(description: string) {
  return Type.Optional(
    Type.Array(Condition, {
      description,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  );
}

export const ObservedGeneration = Type.Optional(
  Type.Integer({ description: 'The generation of the spec last handled (written by Metacontroller).' }),
);

export const RedisStatus = Type.Object(
  {
    phase: Type.Optional(
      StringEnum(['Pending', 'Running', 'Failed', 'Hibernated'] as const, {
        description:
          'Running while exactly one master pod is Ready (replica health is in the ReplicasInSync condition); Pending otherwise; Failed when the spec is invalid (see the SpecValid condition); Hibernated while spec.hibernate is true (the Hibernated condition says whether every pod has stopped).',
      }),
    ),
    masterStatus: Type.Optional(
      Type.String({ description: 'Ready, NotReady or None (no pod is labelled master yet).' }),
    ),
    master: Type.Optional(Type.String({ description: 'Name of the pod that is master now (it moves on failover).' })),
    masterIP: Type.Optional(Type.String({ description: 'Pod IP of the master.' })),
    replicaStatus: Type.Optional(
      StringMap(Type.String(), 'Per replica pod: Ready, Syncing (link to the master down) or NotReady.'),
    ),
    readyReplicas: Type.Optional(Type.Integer({ description: 'Replica pods that are Ready (linked to the master).' })),
    replicas: Type.Optional(Type.Integer({ description: 'Replica pods that exist (for the scale subresource).' })),
    summary: Type.Optional(
      Type.Object(
        {
          replicas: Type.String({
            description:
              'Replica pods Ready and linked to the master, of those wanted (spec.replicas; 0 while hibernating), as "2/3": the REPLICAS column.',
          }),
        },
        {
          description:
            'Figures written for `kubectl get redis` to print (a printer column reads one field, so ready/desired is one string).',
        },
      ),
    ),
    selector: Type.Optional(
      Type.String({ description: 'Label selector of the pods (for the scale subresource and HPAs).' }),
    ),
    rollout: Type.Optional(
      Type.Object(
        {
          updatedPods: Type.Array(Type.String({ description: 'A pod name.' }), {
            description: "Pods running the current pod template (their StatefulSet's update revision).",
          }),
          stalePods: Type.Array(Type.String({ description: 'A pod name.' }), {
            description:
              'Pods still running an older template; the sidecar replaces them one at a time, the master last.',
          }),
        },
        {
          description:
            'Progress of a rolling update (version, image, resources or a static config directive changed). The Updated condition says what it waits for.',
        },
      ),
    ),
    switchover: Type.Optional(
      Type.String({
        description:
          'Outcome of the last on-demand switchover request, as the sidecar recorded it (annotation redis.example.com/switchover-status).',
      }),
    ),
    nodes: NodesStatus('Redis'),
    backup: Type.Optional(BackupStatus),
    restore: Type.Optional(RestoreStatus),
    secrets: SecretsStatus(
      'Redis',
      'The Secrets this Redis uses that exist (passwords, application users, TLS, S3 credentials), sorted by name, as the sidecar reports them (annotation redis.example.com/secrets: the hook is sent no Secret). Absent until the first report.',
    ),
    conditions: ConditionsStatus(
      'Ready, MasterAvailable, ReplicasInSync, SpecValid, Updated, Hibernated, SecretsReady, and BackupHealthy when spec.backup is set.',
    ),
    observedGeneration: ObservedGeneration,
  },
  { description: 'What the operator observed. Computed from the children and pods only.' },
);

export type RedisStatus = Static<typeof RedisStatus>;
export type Condition = Static<typeof Condition>;
