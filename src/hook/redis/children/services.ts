// The three Services. Invariants: the headless Service (the StatefulSets' serviceName) covers
// every pod and publishes not-ready addresses so pods resolve each other while syncing; the
// master and replicas Services select on the role label the sidecar writes, so traffic only
// follows a role the sidecar decided (the hook never writes that label).
import type { IService } from 'kubernetes-models/v1/Service';
import type { IServicePort } from 'kubernetes-models/v1/ServicePort';
import type { IServiceSpec } from 'kubernetes-models/v1/ServiceSpec';
import {
  REDIS_PORT,
  ROLE_LABEL,
  ROLE_MASTER,
  ROLE_REPLICA,
  childNames,
  podSelectorLabels,
} from '../../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import type { Child } from '../../common/child.ts';

const PORTS: IServicePort[] = [{ name: 'redis', port: REDIS_PORT, targetPort: REDIS_PORT, protocol: 'TCP' }];

function service(ctx: HookContext, name: string, component: string, spec: IServiceSpec): Child<IService> {
  return { apiVersion: 'v1', kind: 'Service', metadata: childMetadata(ctx, name, component), spec };
}

export function desiredServices(ctx: HookContext): Array<Child<IService>> {
  const names = childNames(ctx.name);
  const pods = podSelectorLabels(ctx.name);
  return [
    service(ctx, names.headless, 'headless', {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: pods,
      ports: PORTS,
    }),
    service(ctx, names.masterService, 'master', {
      type: 'ClusterIP',
      selector: { ...pods, [ROLE_LABEL]: ROLE_MASTER },
      ports: PORTS,
    }),
    service(ctx, names.replicasService, 'replicas', {
      type: 'ClusterIP',
      selector: { ...pods, [ROLE_LABEL]: ROLE_REPLICA },
      ports: PORTS,
    }),
  ];
}
