// Events the sidecar records on a Redis or a RedisCluster (new-style core/v1 fields).
// Invariants:
// - Events are best effort: emitEvent never throws; a lost Event must not fail a failover.
// - metav1.MicroTime fields are written with V1MicroTime (six fractional digits); a plain Date
//   (three) is refused by the API server.
// - Messages are cut to 1024 characters, the API server's limit.
import { V1MicroTime } from '@kubernetes/client-node';
import { API_VERSION, KIND } from '../../../api/labels.ts';
import { kubeFailure } from './errors.ts';
import { timeoutOptions, type CoreCalls, type RedisRef } from './request.ts';

/** reportingComponent / source.component of our Events. */
export const REPORTING_CONTROLLER = 'redis-operator';

/**
 * Records a core/v1 Event on the Redis (new-style fields: eventTime, action, reportingComponent,
 * reportingInstance = `identity`), or on another of our kinds (`kind`, e.g. RedisCluster). Best
 * effort: returns false (and logs) instead of throwing.
 */
export async function emitEvent(
  calls: CoreCalls,
  identity: string,
  redis: RedisRef,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
  kind: string = KIND,
): Promise<boolean> {
  const now = new Date();
  const involvedObject: Record<string, string> = {
    apiVersion: API_VERSION,
    kind,
    name: redis.name,
    namespace: redis.namespace,
  };
  if (redis.uid) involvedObject['uid'] = redis.uid;
  try {
    await calls.core.createNamespacedEvent(
      {
        namespace: redis.namespace,
        body: {
          metadata: { generateName: `${redis.name}.` },
          involvedObject,
          type,
          reason,
          message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
          action: reason,
          eventTime: new V1MicroTime(now.getTime()),
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          reportingComponent: REPORTING_CONTROLLER,
          reportingInstance: identity,
          source: { component: REPORTING_CONTROLLER },
        },
      },
      timeoutOptions(calls.timeoutMs),
    );
    return true;
  } catch (err) {
    const f = kubeFailure(err);
    calls.logger.warn(
      { namespace: redis.namespace, name: redis.name, reason, code: f.code, err: f.message },
      'could not record event',
    );
    return false;
  }
}
