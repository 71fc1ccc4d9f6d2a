// Pieces both cluster harnesses (the stand-in, test/cluster/index.ts, and the real control plane,
// test/k8s/system-cluster.ts) answer the same way: polling a check with a self-explaining
// timeout, and core Events as the flat records the scenarios filter.
import { performance } from 'node:perf_hooks';

type Json = Record<string, unknown>;
const rec = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});

export interface EventRecord {
  namespace: string;
  object: string;
  type: string;
  reason: string;
  message: string;
  source: string;
  count: number;
  resourceVersion: number;
}

export interface EventFilter {
  namespace?: string;
  name?: string;
  reason?: string;
}

/** core/v1 Events as records, oldest first, optionally only those about `name` / with `reason`. */
export function eventRecords(events: ReadonlyArray<{ metadata: { namespace?: string; resourceVersion?: string } } & Json>, filter: EventFilter = {}): EventRecord[] {
  return events
    .map((e) => {
      const involved = rec(e['involvedObject']);
      return {
        namespace: e.metadata.namespace ?? '',
        object: `${String(involved['kind'] ?? '')}/${String(involved['name'] ?? '')}`,
        name: String(involved['name'] ?? ''),
        type: String(e['type'] ?? ''),
        reason: String(e['reason'] ?? ''),
        message: String(e['message'] ?? ''),
        source: String(e['reportingInstance'] ?? rec(e['source'])['component'] ?? ''),
        count: typeof e['count'] === 'number' ? e['count'] : 1,
        resourceVersion: Number(e.metadata.resourceVersion),
      };
    })
    .filter((e) => (filter.name === undefined || e.name === filter.name) && (filter.reason === undefined || e.reason === filter.reason))
    .sort((a, b) => a.resourceVersion - b.resourceVersion)
    .map(({ name: _n, ...e }) => e);
}

/** Polls `check` every 25 ms until it returns a truthy value; on timeout throws with `dump()`. */
export async function pollUntil<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs: number, description: string, dump: () => string): Promise<T> {
  const start = performance.now();
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== null && v !== false) return v;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() - start > timeoutMs) {
      const why = lastError instanceof Error ? `\n(last check threw: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${why}\n\n${dump()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
