// Resource discovery from the API's own discovery documents (GET /api/v1, /apis/<group>/<version>,
// the APIResourceList), as client-go's discovery client + REST mapper do: plural, kind,
// namespaced, and whether a /status subresource exists. CRDs are found the same way.
// Invariants: one document per group/version is cached; a miss refetches it (a CRD may have been
// installed since), and a group/version the server does not serve is a 404 KubeApiError.
import { KubeApiError } from './objects.ts';
import type { Transport } from './http.ts';
import { splitApiVersion, type ResourceRef } from './types.ts';

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

export class Discovery {
  private readonly transport: Transport;
  private readonly docs = new Map<string, ResourceRef[]>();

  constructor(transport: Transport) {
    this.transport = transport;
  }

  async byPlural(apiVersion: string, plural: string): Promise<ResourceRef> {
    return this.find(apiVersion, (r) => r.resource === plural, `resource "${plural}"`);
  }

  async byKind(apiVersion: string, kind: string): Promise<ResourceRef> {
    return this.find(apiVersion, (r) => r.kind === kind, `kind "${kind}"`);
  }

  private async find(apiVersion: string, match: (r: ResourceRef) => boolean, what: string): Promise<ResourceRef> {
    const cached = this.docs.get(apiVersion)?.find(match);
    if (cached !== undefined) return { ...cached };
    const found = (await this.fetch(apiVersion)).find(match);
    if (found === undefined) {
      throw new KubeApiError({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: `the server does not serve ${what} in ${apiVersion}`,
      });
    }
    return { ...found };
  }

  private async fetch(apiVersion: string): Promise<ResourceRef[]> {
    const { group, version } = splitApiVersion(apiVersion);
    const path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const doc = (await this.transport.request({ method: 'GET', path })) as { resources?: APIResource[] };
    const list = doc.resources ?? [];
    const subresources = new Set(list.filter((r) => r.name.includes('/')).map((r) => r.name));
    const refs = list
      .filter((r) => !r.name.includes('/'))
      .map((r): ResourceRef => ({
        group,
        version,
        resource: r.name,
        kind: r.kind,
        namespaced: r.namespaced,
        statusSubresource: subresources.has(`${r.name}/status`),
      }));
    this.docs.set(apiVersion, refs);
    return refs;
  }
}
