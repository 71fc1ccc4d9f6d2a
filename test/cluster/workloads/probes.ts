// Container probes as the kubelet runs them (pkg/kubelet/prober/worker.go): one worker per
// container and probe type, ticking every periodSeconds from the pod's admission; a probe
// result counts only after failureThreshold/successThreshold consecutive equal results; startup
// gates readiness and liveness; a new container (new containerID) resets the worker; after a
// liveness/startup failure the worker holds until the next container. Exec probes run the pod
// spec's command with the container's environment, killed (and failed) at timeoutSeconds.
// Invariant: one probe at a time per worker; a result that arrives for a container that has
// since been replaced is discarded.
import net from 'node:net';
import type { V1Probe } from '@kubernetes/client-node';
import { expand, mapPathsInText, type Mount } from './container.ts';
import { spawnGroup } from './processes.ts';

export type ProbeType = 'startup' | 'readiness' | 'liveness';
export type ProbeOutcome = 'success' | 'failure';

export interface ProbeTarget {
  podIP: string;
  env: Array<[string, string]>;
  cwd: string;
  /** The container's volume mounts: container paths in an exec probe's command are mapped to them. */
  mounts?: Mount[];
  /** Named container ports, for tcpSocket/httpGet probes that name their port. */
  ports: Record<string, number>;
}

export interface ProbeRun {
  outcome: ProbeOutcome;
  output: string;
}

/** Runs a probe once. Only timeouts and exit codes decide; output is kept for logs. */
export async function runProbe(probe: V1Probe, target: ProbeTarget, timeoutMs: number): Promise<ProbeRun> {
  if (probe.exec) {
    // The kubelet expands $(VAR) in exec probe commands from the container's static env values.
    const vars = new Map(target.env);
    const argv = (probe.exec.command ?? []).map((a) =>
      mapPathsInText(
        target.mounts ?? [],
        expand(a, (n) => vars.get(n)),
      ),
    );
    if (argv.length === 0) return { outcome: 'failure', output: 'exec probe without a command' };
    const proc = spawnGroup(argv, { env: Object.fromEntries(target.env), cwd: target.cwd, capture: true });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const result = await Promise.race([proc.exited, timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') {
      proc.signal('SIGKILL');
      await proc.exited;
      return { outcome: 'failure', output: `command timed out after ${timeoutMs} ms` };
    }
    if (result.error) return { outcome: 'failure', output: result.error };
    return { outcome: result.code === 0 ? 'success' : 'failure', output: proc.output() };
  }
  const port = (p: number | string | undefined) => (typeof p === 'number' ? p : /^\d+$/.test(p ?? '') ? Number(p) : target.ports[p ?? '']);
  if (probe.tcpSocket) {
    const p = port(probe.tcpSocket.port as number | string);
    if (p === undefined) return { outcome: 'failure', output: `unknown port ${String(probe.tcpSocket.port)}` };
    const host = probe.tcpSocket.host ?? target.podIP;
    return new Promise((resolve) => {
      const socket = net.createConnection({ host, port: p });
      const done = (run: ProbeRun) => {
        socket.destroy();
        resolve(run);
      };
      socket.setTimeout(timeoutMs, () => done({ outcome: 'failure', output: 'timeout' }));
      socket.once('connect', () => done({ outcome: 'success', output: '' }));
      socket.once('error', (e) => done({ outcome: 'failure', output: e.message }));
    });
  }
  if (probe.httpGet) {
    const p = port(probe.httpGet.port as number | string);
    if (p === undefined) return { outcome: 'failure', output: `unknown port ${String(probe.httpGet.port)}` };
    const host = probe.httpGet.host ?? target.podIP;
    // The pod's own IP (a pod network's bridge address in the node agent) or loopback; nothing else.
    if (!host.startsWith('127.') && host !== target.podIP) return { outcome: 'failure', output: `refusing non-loopback probe host ${host}` };
    const scheme = (probe.httpGet.scheme ?? 'HTTP').toLowerCase();
    const headers = Object.fromEntries((probe.httpGet.httpHeaders ?? []).map((h) => [h.name, h.value]));
    try {
      const res = await fetch(`${scheme}://${host}:${p}${probe.httpGet.path ?? '/'}`, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
      await res.body?.cancel();
      return { outcome: res.status >= 200 && res.status < 400 ? 'success' : 'failure', output: `HTTP ${res.status}` };
    } catch (e) {
      return { outcome: 'failure', output: (e as Error).message };
    }
  }
  return { outcome: 'failure', output: 'unsupported probe handler (grpc is not modelled)' };
}

/** What a worker needs to know about the container it probes, read at each tick. */
export interface ProbedContainer {
  /** undefined while no container exists yet. */
  containerID: string | undefined;
  running: boolean;
  /** Milliseconds since the epoch when the current container started. */
  startedAtMs: number | undefined;
  /** The startup probe succeeded, or there is none. */
  started: boolean;
  terminating: boolean;
  target: ProbeTarget | undefined;
}

export interface ProbeWorkerOptions {
  type: ProbeType;
  probe: V1Probe;
  /** Multiplies periodSeconds and initialDelaySeconds (never timeoutSeconds). 1 = real time. */
  timeScale: number;
  container: () => ProbedContainer;
  /** A threshold was crossed: the result for this container changed (or was re-affirmed). */
  onResult: (type: ProbeType, outcome: ProbeOutcome, containerID: string, output: string) => void;
}

/** Kubernetes defaults: period 10 s, timeout 1 s, success 1, failure 3. */
export function probeTimings(probe: V1Probe) {
  return {
    periodSeconds: probe.periodSeconds ?? 10,
    timeoutSeconds: probe.timeoutSeconds ?? 1,
    successThreshold: probe.successThreshold ?? 1,
    failureThreshold: probe.failureThreshold ?? 3,
    initialDelaySeconds: probe.initialDelaySeconds ?? 0,
  };
}

export class ProbeWorker {
  readonly type: ProbeType;
  readonly #o: ProbeWorkerOptions;
  readonly #t: ReturnType<typeof probeTimings>;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  /** A tick that came while a probe ran: like Go's ticker channel (buffer 1), it runs right after. */
  #pending = false;
  #stopped = false;
  #containerID: string | undefined;
  #onHold = false;
  #last: ProbeOutcome | undefined;
  #run = 0;

  constructor(options: ProbeWorkerOptions) {
    this.type = options.type;
    this.#o = options;
    this.#t = probeTimings(options.probe);
    // The real worker's first doProbe runs when the pod is admitted, before its container can
    // be running, so in effect the first probe comes one period after admission.
    this.#timer = setInterval(() => void this.tick(), this.#t.periodSeconds * 1000 * options.timeScale);
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  /** The kubelet's manual trigger (e.g. readiness right after the startup probe succeeded). */
  trigger(): void {
    setImmediate(() => void this.tick());
  }

  async tick(): Promise<void> {
    if (this.#stopped) return;
    if (this.#busy) {
      this.#pending = true;
      return;
    }
    await this.#doProbe();
    while (this.#pending && !this.#stopped) {
      this.#pending = false;
      await this.#doProbe();
    }
  }

  async #doProbe(): Promise<void> {
    const c = this.#o.container();
    if (c.containerID === undefined) return;
    if (c.containerID !== this.#containerID) {
      this.#containerID = c.containerID;
      this.#onHold = false;
      this.#last = undefined;
      this.#run = 0;
    }
    if (this.#onHold || !c.running || c.target === undefined) return;
    if (c.terminating && this.type !== 'readiness') {
      this.stop();
      return;
    }
    if (c.startedAtMs !== undefined && Date.now() - c.startedAtMs < this.#t.initialDelaySeconds * 1000 * this.#o.timeScale) return;
    if (this.type === 'startup' ? c.started : !c.started) return;
    this.#busy = true;
    let run: ProbeRun;
    try {
      run = await runProbe(this.#o.probe, c.target, this.#t.timeoutSeconds * 1000);
    } finally {
      this.#busy = false;
    }
    if (this.#stopped || this.#o.container().containerID !== c.containerID) return;
    if (this.#last === run.outcome) this.#run += 1;
    else {
      this.#last = run.outcome;
      this.#run = 1;
    }
    const threshold = run.outcome === 'failure' ? this.#t.failureThreshold : this.#t.successThreshold;
    if (this.#run < threshold) return;
    if (this.type !== 'readiness' && run.outcome === 'failure') {
      this.#onHold = true;
      this.#run = 0;
    }
    this.#o.onResult(this.type, run.outcome, c.containerID, run.output);
  }
}
