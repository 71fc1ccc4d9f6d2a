// Fails fast with a clear message when the tests would run on a Node older than the project needs
// (this repo brings Node 24 as a dev dependency; npm scripts put it first on PATH).
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`redis-operator needs Node >= 22.18 (running ${process.version}). Run 'npm ci' so the bundled Node 24 is used.`);
  process.exit(1);
}
