// The security parts of the Redis API: where the passwords come from, TLS,
// application users, how long a changed password keeps working, and the NetworkPolicy. Part of
// the one schema source (schema.ts composes them into RedisSpec); the same invariants hold:
// every property described, defaults here and only here, structural output.
import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from './typebox-helpers.ts';
import { DNS_SUBDOMAIN_PATTERN, NO_CONTROL_PATTERN, SECRET_KEY_PATTERN } from './text.ts';

export const AuthSpec = Type.Object(
  {
    secretName: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: DNS_SUBDOMAIN_PATTERN,
      description: 'Name of a Secret in the same namespace that holds the Redis password.',
    }),
    key: Type.String({
      default: 'password',
      minLength: 1,
      maxLength: 253,
      pattern: SECRET_KEY_PATTERN,
      description: 'Key of the password inside the Secret.',
    }),
  },
  {
    description:
      'Where the password comes from. When unset, the operator creates a Secret <name>-auth with a random password, owned by this Redis: Redis never runs without a password.',
  },
);

export const TlsSpec = Type.Object(
  {
    secretName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description:
          'A Secret in the same namespace with tls.crt, tls.key and ca.crt (the layout cert-manager writes). Its certificate must name *.<name>-headless.<namespace>.svc (the sidecar checks it) and serve for clients and replication. Defaults to <name>-tls when certManager is set.',
      }),
    ),
    certManager: Type.Optional(
      Type.Object(
        {
          issuerRef: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 253, description: 'The Issuer or ClusterIssuer.' }),
              kind: StringEnum(['Issuer', 'ClusterIssuer'] as const, {
                default: 'Issuer',
                description: 'Issuer (same namespace) or ClusterIssuer.',
              }),
              group: Type.String({ default: 'cert-manager.io', minLength: 1, description: 'The issuer API group.' }),
            },
            { description: 'Who signs the certificate.' },
          ),
        },
        {
          description:
            'Asks cert-manager for the certificate: a Certificate <name>-tls child (needs cert-manager and the manifests/components/cert-manager kustomize component) naming the Services and the pods, written to secretName.',
        },
      ),
    ),
  },
  {
    description:
      'TLS for clients and replication: Redis listens with TLS on 6379 and the plaintext port is closed. Set at creation only. A renewed certificate in the Secret is loaded by every node without a restart.',
    'x-kubernetes-validations': [
      { rule: 'has(self.secretName) || has(self.certManager)', message: 'tls needs secretName or certManager' },
    ],
  },
);

export const UsersSpec = Type.Array(
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$',
        description: 'The ACL user name (not default).',
      }),
      rules: Type.String({
        maxLength: 1024,
        pattern: NO_CONTROL_PATTERN,
        description:
          'ACL rules for commands, keys and channels, as ACL SETUSER takes them: for example "~app:* +@read +@write -@dangerous". Passwords and on/off come from the operator, not from here.',
      }),
      passwordSecret: Type.Object(
        {
          name: Type.String({
            minLength: 1,
            maxLength: 253,
            pattern: DNS_SUBDOMAIN_PATTERN,
            description: 'A Secret in the Redis namespace.',
          }),
          key: Type.String({
            default: 'password',
            minLength: 1,
            maxLength: 253,
            pattern: SECRET_KEY_PATTERN,
            description: 'Key of the password inside the Secret.',
          }),
        },
        { description: "Where the user's password is." },
      ),
    },
    { description: 'An application user.' },
  ),
  {
    maxItems: 32,
    description:
      'Application users, applied to every node by the sidecar (ACLs do not replicate), including pods that restart or join later. A user removed from this list is removed from every node.',
  },
);

export const PasswordGracePeriodSeconds = Type.Integer({
  default: 600,
  minimum: 0,
  maximum: 604800,
  description:
    "When a password Secret changes (the default user's or an application user's), how long the old and the new password both work on every node, so clients can move over without an outage; then only the new one does. 0 drops the old password at once (for a leaked one).",
});

/** A label selector of matchLabels only, as the NetworkPolicy writes it. */
function MatchLabels(what: string) {
  return Type.Object(
    {
      matchLabels: Type.Unsafe<Record<string, string>>({
        type: 'object',
        additionalProperties: { type: 'string' },
        maxProperties: 16,
        description: `Labels a ${what} needs, all of them; {} matches every ${what}.`,
      }),
    },
    { description: `Which ${what}s: matchLabels only.` },
  );
}

/** One place the monitoring stack runs, written as a NetworkPolicy peer. */
export const MonitoringPeer = Type.Object(
  {
    namespaceSelector: Type.Optional(MatchLabels('namespace')),
    podSelector: Type.Optional(MatchLabels('pod')),
  },
  {
    minProperties: 1,
    description:
      'Pods matching podSelector in the namespaces matching namespaceSelector. podSelector alone: pods of the Redis namespace; namespaceSelector alone: every pod of those namespaces (kubernetes.io/metadata.name selects a namespace by name).',
  },
);

export const NetworkPolicySpec = Type.Object(
  {
    allowFrom: Type.Unsafe<Record<string, string>>({
      type: 'object',
      additionalProperties: { type: 'string' },
      minProperties: 1,
      maxProperties: 16,
      description:
        'Labels of the client pods (in the Redis namespace) allowed to reach Redis: a pod needs all of them.',
    }),
    // No default in the CRD: the API server would write one fixed namespace into every Redis,
    // wrong for an operator installed anywhere else. Unset, the hook fills in its own namespace.
    operatorNamespace: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description:
          "Namespace of the operator (its sidecars talk to every Redis pod). Unset: the namespace the operator runs in (the hook's POD_NAMESPACE); set it only when the sidecars run elsewhere than the hook.",
      }),
    ),
    monitoringFrom: Type.Array(MonitoringPeer, {
      default: [],
      maxItems: 8,
      description:
        'Who may reach the metrics port (9121: the exporter, through a proxy that serves GET /metrics only). Empty, the default: nobody, the port is closed to every peer. List where Prometheus runs, for example [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}, podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}].',
    }),
  },
  {
    description:
      'When set, a NetworkPolicy <name>-ingress lets only the pods of this Redis (replication), the operator and the client pods labelled allowFrom reach port 6379, and only the peers of monitoringFrom reach the metrics port. Needs a network plugin that enforces NetworkPolicies.',
  },
);

export type AuthSpec = Static<typeof AuthSpec>;
export type TlsSpec = Static<typeof TlsSpec>;
