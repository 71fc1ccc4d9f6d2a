// Our CRD as the API server serves it: the API resource a CustomResourceDefinition registers, and
// the resource for CustomResourceDefinition objects themselves (so `get crd` shows what is
// installed).
// Invariant: resourceFromCrd reads the CRD's served storage version, the one the API server
// stores and validates against; a CRD without one is refused.
import { defineResource, type ResourceDef } from '../support/kube-api/index.ts';
import { asRecord as rec, isRecord } from '../support/records.ts';

/** The API resource a CRD serves (what the API server registers when the CRD is created). */
export function resourceFromCrd(crd: unknown): ResourceDef {
  const spec = rec(rec(crd)['spec']);
  const names = rec(spec['names']);
  const versions = (Array.isArray(spec['versions']) ? spec['versions'] : []).map(rec);
  const version = versions.find((v) => v['storage'] === true && v['served'] === true);
  if (!version) throw new Error('CRD has no served storage version');
  const sub = rec(version['subresources']);
  const scale = isRecord(sub['scale']) ? sub['scale'] : undefined;
  const strip = (p: unknown) => String(p ?? '').replace(/^\./, '');
  return defineResource({
    group: String(spec['group']),
    version: String(version['name']),
    resource: String(names['plural']),
    singular: String(names['singular'] ?? String(names['kind']).toLowerCase()),
    kind: String(names['kind']),
    listKind: String(names['listKind'] ?? `${String(names['kind'])}List`),
    namespaced: spec['scope'] !== 'Cluster',
    shortNames: Array.isArray(names['shortNames']) ? names['shortNames'].map(String) : [],
    custom: true,
    statusSubresource: isRecord(sub['status']),
    ...(scale
      ? {
          scale: {
            specReplicasPath: strip(scale['specReplicasPath']),
            statusReplicasPath: strip(scale['statusReplicasPath']),
            ...(scale['labelSelectorPath'] ? { labelSelectorPath: strip(scale['labelSelectorPath']) } : {}),
          },
        }
      : {}),
    generation: true,
    deleteReturnsObject: true,
  });
}

export const CRD_RESOURCE = defineResource({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
  shortNames: ['crd', 'crds'],
  statusSubresource: true,
  generation: true,
  deleteReturnsObject: true,
});
