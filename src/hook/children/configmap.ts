// ConfigMap <name>-config holding redis.conf (see redis-conf.ts for what the file guarantees).
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { CONFIG_KEY, childNames } from '../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import type { Child } from './types.ts';

export function desiredConfigMap(ctx: HookContext, conf: string): Child<IConfigMap> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: childMetadata(ctx, childNames(ctx.name).config, 'config'),
    data: { [CONFIG_KEY]: conf },
  };
}
