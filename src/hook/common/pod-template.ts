// Pieces of the pod template every kind's Redis pods share (a Redis's two StatefulSets, a
// RedisCluster's shards): the uid they run as, the restricted container security context, the
// config and tmp volumes, the probes' redis-cli and liveness script. Invariants: pods run as the
// redis image's user (999) with the restricted Pod Security profile; probes authenticate as the
// operator's user, never the one clients use. A change here changes every kind's pods.
import type { IProbe } from 'kubernetes-models/v1/Probe';
import type { ISecurityContext } from 'kubernetes-models/v1/SecurityContext';
import { OPERATOR_USER } from '../../api/auth.ts';
import { GROUP, REDIS_PORT } from '../../api/labels.ts';
import { TLS_FILE_DIRECTIVES } from '../../api/tls.ts';

/** Pod template annotation with a hash of redis.conf: a config change rolls the pods. */
export const CONFIG_HASH_ANNOTATION = `${GROUP}/config-hash`;
/** uid/gid of the `redis` user in the official redis images (Debian and Alpine). */
export const REDIS_UID = 999;
export const CONFIG_VOLUME = 'config';
export const TMP_VOLUME = 'tmp';

export const restrictedContainer = (uid: number): ISecurityContext => ({
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

/**
 * Probes authenticate as the operator's user, whose password never rotates: a rotation of the
 * password clients use (the default user's) can never fail a probe (issue 10's outage). With TLS
 * they verify the node's certificate chain against the mounted CA.
 */
export function redisCli(tls: boolean): string {
  const transport = tls ? ` --tls --cacert ${TLS_FILE_DIRECTIVES['tls-ca-cert-file']}` : '';
  return `REDISCLI_AUTH="$OPERATOR_PASSWORD" redis-cli${transport} --user ${OPERATOR_USER} -h "$POD_IP" -p ${REDIS_PORT}`;
}

/** Alive iff redis-server answers at all: loading a big data set or running a long script is not death. */
export function livenessScript(tls: boolean): string {
  return [`out=$(${redisCli(tls)} ping 2>&1)`, 'case "$out" in *PONG*|*LOADING*|*BUSY*|*MASTERDOWN*) exit 0 ;; esac', 'exit 1'].join('\n');
}

export function exec(script: string): Pick<IProbe, 'exec'> {
  return { exec: { command: ['sh', '-c', script] } };
}
