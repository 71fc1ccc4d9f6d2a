// Fault rules for the API fault proxy (fault-proxy.ts): make matching requests fail with a status,
// hang, reset the connection, be delayed, or (a watch) ask the real server for a version it no
// longer keeps. Rules match on method, path, watch-ness and the calling client (named by its
// service-account token), so one test can cut a single elector off the API while another keeps
// going.
// Invariant: a rule with `times` stops matching after that many hits; rules are checked in the
// order they were added and the first match wins.

export type FaultAction =
  | { kind: 'status'; code: number; reason?: string; message?: string }
  /** Never answer (until the client gives up or the server closes): a partition that drops packets. */
  | { kind: 'hang' }
  /** Destroy the TCP connection without an answer. */
  | { kind: 'reset' }
  /** Answer normally after a delay. */
  | { kind: 'delay'; ms: number }
  /**
   * Forward a watch asking from this older resourceVersion (default '1') instead of the client's.
   * For a resource whose watch cache began after that version (a custom resource: its CRD came
   * after start-up) the real API server then answers as it does once a client's version has been
   * compacted away: a 200 stream holding one ERROR event with a 410 Expired Status. (A built-in
   * resource's cache began at about version 1, so there it replays everything.) Other requests
   * pass unchanged.
   */
  | { kind: 'rewind'; resourceVersion?: string };

export interface FaultRule {
  method?: string | string[];
  /**
   * A string matches that exact path or anything below it (`/api/v1/pods` matches `/api/v1/pods/x`); a RegExp is tested
   * on the path.
   */
  path?: string | RegExp;
  /** Only requests carrying `Authorization: Bearer <client>`. */
  client?: string;
  /** Only watch requests (true) or only non-watch requests (false). */
  watch?: boolean;
  /** How many matching requests to affect (default: all until removed). */
  times?: number;
  action: FaultAction;
}

export interface Fault {
  /** Requests this rule has affected so far. */
  readonly hits: number;
  remove(): void;
}

export interface RequestInfo {
  method: string;
  path: string;
  client: string;
  watch: boolean;
}

interface ActiveRule {
  rule: FaultRule;
  hits: number;
}

export class Faults {
  private rules: ActiveRule[] = [];

  add(rule: FaultRule): Fault {
    const active: ActiveRule = { rule, hits: 0 };
    this.rules.push(active);
    return {
      get hits() {
        return active.hits;
      },
      remove: () => {
        this.rules = this.rules.filter((r) => r !== active);
      },
    };
  }

  clear(): void {
    this.rules = [];
  }

  /** The action for this request, counting the hit; undefined when no rule matches. */
  take(req: RequestInfo): FaultAction | undefined {
    for (const active of this.rules) {
      const { rule } = active;
      if (rule.times !== undefined && active.hits >= rule.times) continue;
      if (rule.method !== undefined) {
        const methods = (Array.isArray(rule.method) ? rule.method : [rule.method]).map((m) => m.toUpperCase());
        if (!methods.includes(req.method)) continue;
      }
      if (rule.path !== undefined) {
        const ok =
          typeof rule.path === 'string'
            ? req.path === rule.path || req.path.startsWith(`${rule.path.replace(/\/$/, '')}/`)
            : rule.path.test(req.path);
        if (!ok) continue;
      }
      if (rule.client !== undefined && rule.client !== req.client) continue;
      if (rule.watch !== undefined && rule.watch !== req.watch) continue;
      active.hits++;
      return rule.action;
    }
    return undefined;
  }
}
