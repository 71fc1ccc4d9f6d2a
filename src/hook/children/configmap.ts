// ConfigMap <name>-config holding redis.conf (see redis-conf.ts for what the file guarantees).
import { CONFIG_KEY, childNames } from '../../api/labels.ts';
import type { HookContext } from '../context.ts';
import type { KubeObject } from '../types.ts';
import { childMetadata } from './meta.ts';

export function desiredConfigMap(ctx: HookContext, conf: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: childMetadata(ctx, childNames(ctx.name).config, 'config'),
    data: { [CONFIG_KEY]: conf },
  };
}
