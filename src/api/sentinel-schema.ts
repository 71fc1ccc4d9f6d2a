// spec.sentinel of a Redis: whether the operator's Sentinel endpoint serves it, and under which master name.
// Invariants: off by default (serving a Redis is a choice its owner makes); the master name is one word a Sentinel
// client can send and a Pub/Sub message can carry (no space, no `/`: `<namespace>/<name>` is the endpoint's own
// qualified form); every property described.
import { Type, type Static } from '@sinclair/typebox';

export const SentinelSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description:
        "Serve this Redis on the operator's Sentinel endpoint (port 26379 of the redis-operator-sentinel Service in the operator's namespace, when the operator runs it): Sentinel-aware clients find the master the operator made, and hear +switch-master when it moves. Clients authenticate to it with the Redis's own password.",
    }),
    masterName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: '^[A-Za-z0-9._:-]+$',
        description:
          'The master name Sentinel clients ask for (their `name`/`service_name`); default the Redis name. It is always served as <namespace>/<masterName> too; the bare name is served only while no other Redis on the endpoint claims it.',
      }),
    ),
  },
  {
    default: {},
    description:
      "The operator's Sentinel endpoint for this Redis (answered by the operator; no Sentinel process runs).",
  },
);

export type SentinelSpec = Static<typeof SentinelSpec>;
