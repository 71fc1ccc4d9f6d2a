// ConfigMap <name>-config holding redis.conf (see redis-conf.ts for what the file guarantees) and,
// while a restore is to happen, its location (restore-container.ts).
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { RESTORE_LOCATION_KEY } from '../../../api/backup.ts';
import { CONFIG_KEY, childNames } from '../../../api/labels.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';
import type { Child } from '../../common/child.ts';

/** restoreLocation: while a restore is still to happen, what the restore init containers load. */
export function desiredConfigMap(ctx: HookContext, conf: string, restoreLocation?: string): Child<IConfigMap> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: childMetadata(ctx, childNames(ctx.name).config, 'config'),
    data: { [CONFIG_KEY]: conf, ...(restoreLocation !== undefined ? { [RESTORE_LOCATION_KEY]: restoreLocation } : {}) },
  };
}
