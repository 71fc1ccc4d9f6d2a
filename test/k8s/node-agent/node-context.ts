// What a pod worker needs from the node that runs it (implemented by node-kubelet.ts). Types only.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AddressPool } from '../../cluster/workloads/kubelet.ts';
import type { KubeClient } from './api-client.ts';
import type { MachineShape } from './pod-volumes.ts';
import type { PodWorker } from './pod-worker.ts';
import type { PodNetworkLike } from './sandbox.ts';

export interface NodeContext {
  readonly name: string;
  readonly hostIP: string;
  /** The node's own credential (system:node:<name>). */
  readonly client: KubeClient;
  /** The node's own pod IPs (loopback mode); undefined with a pod network. */
  readonly addresses: AddressPool | undefined;
  /** A pod network (namespaces on a bridge) instead of loopback pod IPs. */
  readonly network: PodNetworkLike | undefined;
  /** The agent's data directory (pods/<uid> live under it). */
  readonly dataDir: string;
  readonly logger: Logger;
  readonly timeScale: number;
  readonly redisServer: string;
  readonly machine: MachineShape;
  /** How often secret/configMap/projected volumes are re-read for running pods. */
  readonly volumeRefreshMs: number;
  /** The pod with this uid as the node's watch last saw it (undefined once it left the API). */
  currentPod(uid: string): V1Pod | undefined;
  /** `namespace/name` of another live pod of the agent that mounts this PersistentVolume. */
  holderOf(pvName: string, except: PodWorker): string | undefined;
  requestStatus(worker: PodWorker): void;
  /** The pod is gone and its processes too: drop the worker (its logs are kept a while). */
  forget(worker: PodWorker): void;
}
