// The SyncError Warning Events Metacontroller records on a parent, written as client-go's event
// recorder writes them: a core/v1 Event (involvedObject with the parent's uid and
// resourceVersion, source.component + reportingComponent, firstTimestamp/lastTimestamp, count),
// named `<parent>.<hex nanoseconds>`; an identical event again is a strategic merge PATCH of
// count and lastTimestamp (a fresh create when it was deleted meanwhile). A real API server
// validates these fields (legacyValidateEvent for v1), so they are all set.
// Invariants: never throws (an event that cannot be written is logged and dropped, as client-go
// does); without client-go's spam filter.
import type { Logger } from 'pino';
import type { StoredObject } from '../../support/kube-api/resources.ts';
import type { KubeClient, ResourceRef } from '../../support/kube-client/index.ts';
import { errorText, isApiError } from './model.ts';

const COMPONENT = 'metacontroller';

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export class EventRecorder {
  private readonly client: KubeClient;
  private eventsDef: Promise<ResourceRef> | undefined;
  private readonly recorded = new Map<string, { name: string; count: number }>();
  private serial = 0;

  constructor(client: KubeClient) {
    this.client = client;
  }

  async warning(parent: StoredObject, reason: string, message: string, log: Logger): Promise<void> {
    const dedupe = `${parent.metadata.uid}\u0000${reason}\u0000${message}`;
    const now = rfc3339(Date.now());
    const ns = parent.metadata.namespace || 'default';
    try {
      this.eventsDef ??= this.client.resource('v1', 'events');
      const def = await this.eventsDef.catch((error: unknown) => {
        this.eventsDef = undefined;
        throw error;
      });
      const existing = this.recorded.get(dedupe);
      if (existing !== undefined) {
        try {
          await this.client.patch(def, ns, existing.name, { count: existing.count + 1, lastTimestamp: now }, { type: 'strategic' });
          existing.count += 1;
          return;
        } catch (error) {
          if (!isApiError(error, 'NotFound')) throw error;
        }
      }
      this.serial += 1;
      const name = `${parent.metadata.name}.${(BigInt(Date.now()) * 1_000_000n + BigInt(this.serial % 1_000_000)).toString(16)}`;
      await this.client.create(def, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        involvedObject: {
          apiVersion: parent.apiVersion,
          kind: parent.kind,
          namespace: parent.metadata.namespace,
          name: parent.metadata.name,
          uid: parent.metadata.uid,
          resourceVersion: parent.metadata.resourceVersion,
        },
        reason,
        message,
        type: 'Warning',
        source: { component: COMPONENT },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: COMPONENT,
      });
      this.recorded.set(dedupe, { name, count: 1 });
    } catch (error) {
      log.warn({ err: errorText(error) }, `could not record the ${reason} event`);
    }
  }
}
