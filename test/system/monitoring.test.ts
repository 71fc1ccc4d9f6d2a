// System test: the monitoring component on the real control plane with a real
// Prometheus and the real redis_exporter in every pod (test/monitoring/live.ts): the master
// crashes twice in a row, RedisFrequentFailovers and RedisInstanceDown fire, nothing else does,
// everything resolves, and every dashboard panel shows live series. Network: 198.18.68.x pods.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prometheusOperatorCrds } from '../k8s/prometheus-operator.ts';
import { runLiveScenario } from '../monitoring/live.ts';
import { boot } from './support.ts';

const SUBNET = 68;

test(
  'a crash-looping master fires exactly the alerts it should, they resolve, and the dashboard has data',
  { timeout: 600_000 },
  async (t) => {
    const crds = prometheusOperatorCrds();
    if ('why' in crds) throw new Error(crds.why);
    const lc = await boot(t, {
      subnet: SUBNET,
      extraCrds: [crds.paths.podMonitors, crds.paths.prometheusRules],
      onProgress: (line) => t.diagnostic(line),
    });
    if (!lc) return;
    const report = await runLiveScenario(lc, (line) => t.diagnostic(line));
    t.diagnostic(`live alerts: ${JSON.stringify(report)}`);
    assert.deepEqual(report.missing, [], 'every expected alert fired');
    assert.deepEqual(report.unexpected, [], 'no other alert fired');
    assert.ok(report.resolved, 'every alert resolved once the Redis recovered');
    assert.deepEqual(report.emptyPanels, [], 'every dashboard panel shows live series');
    // A probe the kubelet cannot even run (a port name another container declares) only says so in
    // an Event. Not one the runtime could not exec in a container the scenario killed (an rpc error).
    const errored = lc
      .events()
      .filter(
        (e) => e.reason === 'Unhealthy' && /errored and resulted in unknown state: (?!rpc error)/.test(e.message),
      );
    assert.deepEqual(
      errored.map((e) => `${e.object}: ${e.message}`),
      [],
      'every probe of the pods can run',
    );
  },
);
