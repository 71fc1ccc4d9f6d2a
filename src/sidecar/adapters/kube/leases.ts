// The Lease calls leader election makes (get, create, replace), translated to and from the pure
// LeaseState/LeaseSpecPlan of lease-decision.ts.
// Invariants:
// - A 409 on a write is a LeaseConflictError (someone else wrote first), distinct from any
//   other failure, so the elector can tell losing a race from the API being unreachable.
// - Replace carries the resourceVersion read, so a stale holder can never overwrite a newer one.
// - acquireTime/renewTime are written with V1MicroTime (six fractional digits); a plain Date
//   (three) is refused by the API server.
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { isConflict, isNotFound, kubeFailure } from './errors.ts';
import type { LeaseSpecPlan, LeaseState } from './lease-decision.ts';
import { timeoutOptions } from './request.ts';

export class LeaseConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseConflictError';
  }
}

/** The three Lease calls leader election makes. Writes throw LeaseConflictError on 409. */
export interface LeaseClient {
  readonly namespace: string;
  readonly name: string;
  get(): Promise<LeaseState | null>;
  create(spec: LeaseSpecPlan): Promise<LeaseState>;
  replace(spec: LeaseSpecPlan, resourceVersion: string): Promise<LeaseState>;
}

function leaseState(lease: V1Lease): LeaseState {
  const spec = lease.spec ?? {};
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    holderIdentity: spec.holderIdentity ?? null,
    leaseDurationSeconds: spec.leaseDurationSeconds ?? null,
    acquireTime: (spec.acquireTime as unknown as string | Date | undefined) ?? null,
    renewTime: (spec.renewTime as unknown as string | Date | undefined) ?? null,
    leaseTransitions: spec.leaseTransitions ?? null,
  };
}

function leaseBody(namespace: string, name: string, spec: LeaseSpecPlan, resourceVersion?: string): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      holderIdentity: spec.holderIdentity,
      leaseDurationSeconds: spec.leaseDurationSeconds,
      acquireTime: new V1MicroTime(spec.acquireTime),
      renewTime: new V1MicroTime(spec.renewTime),
      leaseTransitions: spec.leaseTransitions,
    },
  };
}

export class KubeLeaseClient implements LeaseClient {
  readonly namespace: string;
  readonly name: string;
  private readonly api: CoordinationV1Api;
  private readonly timeoutMs: number;

  constructor(api: CoordinationV1Api, namespace: string, name: string, timeoutMs: number) {
    this.api = api;
    this.namespace = namespace;
    this.name = name;
    this.timeoutMs = timeoutMs;
  }

  async get(): Promise<LeaseState | null> {
    try {
      return leaseState(
        await this.api.readNamespacedLease(
          { namespace: this.namespace, name: this.name },
          timeoutOptions(this.timeoutMs),
        ),
      );
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async create(spec: LeaseSpecPlan): Promise<LeaseState> {
    try {
      return leaseState(
        await this.api.createNamespacedLease(
          { namespace: this.namespace, body: leaseBody(this.namespace, this.name, spec) },
          timeoutOptions(this.timeoutMs),
        ),
      );
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(kubeFailure(err).message);
      throw err;
    }
  }

  async replace(spec: LeaseSpecPlan, resourceVersion: string): Promise<LeaseState> {
    try {
      const body = leaseBody(this.namespace, this.name, spec, resourceVersion);
      return leaseState(
        await this.api.replaceNamespacedLease(
          { namespace: this.namespace, name: this.name, body },
          timeoutOptions(this.timeoutMs),
        ),
      );
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(kubeFailure(err).message);
      throw err;
    }
  }
}
