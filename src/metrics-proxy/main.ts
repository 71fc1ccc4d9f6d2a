// The metrics proxy container's entry point (proxy.ts says what it passes): listens on
// LISTEN_PORT (the metrics port) on every address, forwards to the exporter on
// 127.0.0.1:UPSTREAM_PORT. Both ports come from the hook (hook/common/exporter.ts); no default
// hides a wrong one. SIGTERM closes the listener and exits.
import { createProxyServer } from './proxy.ts';

function port(name: string): number {
  const value = Number(process.env[name]);
  if (!Number.isInteger(value) || value < 1 || value > 65535) {
    console.error(`${name} must be a TCP port, got ${JSON.stringify(process.env[name] ?? '')}`);
    process.exit(2);
  }
  return value;
}

const listen = port('LISTEN_PORT');
const server = createProxyServer({ upstreamPort: port('UPSTREAM_PORT') });
server.listen(listen, () =>
  console.log(`metrics proxy: :${listen} -> 127.0.0.1:${process.env['UPSTREAM_PORT']} (GET /metrics and /health only)`),
);
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
