// The customize hook: which related objects sync and finalize need to see. Depends only on the
// parent (Metacontroller caches the answer per uid and generation). Invariant: never fails on a
// bad spec; the Secret name falls back to the generated one.
import { generatedAuthSecretRef, operatorSecretRef } from '../api/auth.ts';
import { podSelectorLabels } from '../api/labels.ts';
import type { CustomizeRequest, CustomizeResponse } from './types.ts';
import { at, str } from './util.ts';

export function authSecretName(name: string, spec: unknown): string {
  const configured = str(at(spec, 'auth', 'secretName'));
  return configured !== undefined && configured !== '' ? configured : generatedAuthSecretRef(name).secretName;
}

export function customize(request: CustomizeRequest): CustomizeResponse {
  const { name } = request.parent.metadata;
  const namespace = request.parent.metadata.namespace ?? '';
  const selector = { matchLabels: podSelectorLabels(name) };
  return {
    relatedResources: [
      // The pods are grandchildren (the StatefulSets' children): status is computed from them.
      // Every selector rule names the parent's namespace: with hooks v2, Metacontroller (v4.17)
      // lists a rule without one in EVERY namespace, and any matching object anywhere would then
      // trigger a sync of this parent (the hook would filter it, at the cost of the sync).
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: selector },
      // The pods read both passwords from env: status says when either Secret is missing.
      { apiVersion: 'v1', resource: 'secrets', namespace, names: [authSecretName(name, request.parent.spec), operatorSecretRef(name).secretName] },
      // Created from the claim templates, which carry the pod selector labels: finalize waits on them.
      { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace, labelSelector: selector },
    ],
  };
}
