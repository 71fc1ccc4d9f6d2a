// npm run check:monitoring: every alert's promtool unit tests, then the live scenario (test/monitoring/live.ts) on a
// fresh real cluster (real nodes, the operator's Deployment): a real Prometheus scraping the real exporters and
// sidecars while the master crash-loops. Prints what it sees, and ends with
//   alerts_tested=<n>  alerts_passed=<n>  live_alerts_fired_as_expected=<yes|no>
// Exits 1 unless every alert passed and the live alerts fired (and resolved) exactly as expected.
// The live part needs what the system tests need (Linux, root, the built cluster parts and
// images, ../shared); without it the last line says no, with the reason above it.
import { ensureMonitoringTools } from '../test/monitoring/tools.ts';
import { runAlertTests } from '../test/monitoring/rule-files.ts';

const log = (line: string) => console.log(`# ${line}`);
await ensureMonitoringTools(log);
const results = await runAlertTests();
for (const r of results) console.log(`${r.passed ? 'ok  ' : 'FAIL'} ${r.alert}${r.passed ? '' : `\n${r.output}`}`);

let live = false;
const { missing, startSystemCluster } = await import('../test/system/cluster.ts');
const why = missing();
if (why !== undefined) {
  log(`live scenario not run: ${why}`);
} else {
  const { prometheusOperatorCrds } = await import('../test/k8s/prometheus-operator.ts');
  const { runLiveScenario } = await import('../test/monitoring/live.ts');
  const crds = prometheusOperatorCrds();
  if ('why' in crds) throw new Error(crds.why);
  const lc = await startSystemCluster({
    subnet: 80,
    extraCrds: [crds.paths.podMonitors, crds.paths.prometheusRules],
    onProgress: log,
  });
  try {
    const report = await runLiveScenario(lc, log);
    log(
      `fired: ${report.fired.join(', ') || 'none'}; unexpected: ${report.unexpected.join(', ') || 'none'}; missing: ${report.missing.join(', ') || 'none'}`,
    );
    log(`resolved: ${report.resolved}; dashboard panels without data: ${report.emptyPanels.join(', ') || 'none'}`);
    for (const [k, v] of Object.entries(report.timings)) console.log(`${k}=${v}`);
    live = report.missing.length === 0 && report.unexpected.length === 0 && report.resolved;
  } finally {
    await lc.stop();
  }
}
const passed = results.filter((r) => r.passed).length;
console.log(`alerts_tested=${results.length}`);
console.log(`alerts_passed=${passed}`);
console.log(`live_alerts_fired_as_expected=${live ? 'yes' : 'no'}`);
process.exit(passed === results.length && live ? 0 : 1);
