// System test (issue 10, password rotation without an outage): the default user's password Secret
// changes under SET + WAIT 1 traffic. Both passwords work on every pod for the grace period, then
// only the new one; no probe fails (every pod stays Ready throughout), nothing restarts, no
// acknowledged write is lost, the links and the master never change. Before the operator had a
// user of its own, the probes read the old password from their env and every pod went NotReady.
// Network: 198.18.68.x / 198.19.68.x (127.0.68.x on the stand-in).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PASSWORD_GRACE_ANNOTATION, ROLE_LABEL } from '../../src/api/labels.ts';
import { isPodReady } from '../cluster/kubectl.ts';
import { nodeClient } from '../support/cluster-views.ts';
import { allLinked, applyDesign, assertNothingLost, boot, NAME, NS, podIp, podNames, sleep, Writer } from './support.ts';

const SUBNET = 68;
const GRACE_SECONDS = 8;

/** PONG, or the first word of the refusal, for `password` as the default user on the pod at ip. */
async function pingWith(ip: string, password: string): Promise<string> {
  const client = nodeClient(ip, undefined);
  client.on('error', () => {});
  try {
    await client.connect();
    await client.call('AUTH', password);
    return String(await client.call('PING'));
  } catch (err) {
    return String((err as Error).message).split(' ')[0]!;
  } finally {
    client.disconnect();
  }
}

test('a password rotation under writes: a grace period with both passwords, then only the new one; no failed probe, no restart, nothing lost', async (t) => {
  const c = await boot(t, { subnet: SUBNET });
  await applyDesign(t, c);
  await c.apply({
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name: NAME, namespace: NS },
    spec: { passwordGracePeriodSeconds: GRACE_SECONDS },
  });
  const pods = () => podNames(c).map((n) => ({ name: n, ip: podIp(c, n)! }));
  const before = Object.fromEntries(c.pods(NAME).map((p) => [p.metadata.name, { uid: p.metadata.uid, restarts: restartsOf(p) }]));
  const master = c.pods(NAME).find((p) => p.metadata.labels?.[ROLE_LABEL] === 'master')!.metadata.name;

  // Every pod must stay Ready: a readiness probe that failed twice would show here within 2 s.
  const notReady: string[] = [];
  const timer = setInterval(() => {
    for (const p of c.pods(NAME)) if (!isPodReady(p)) notReady.push(`${p.metadata.name} at ${new Date().toISOString()}`);
  }, 100);
  t.after(() => clearInterval(timer));
  const writer = new Writer(c, 'rot');
  writer.start();
  t.after(() => writer.stop());
  await c.waitFor(() => writer.acked.length > 50, 20_000, 'writes acknowledged');

  const OLD = c.password(NAME);
  assert.ok(OLD, 'the generated password');
  const NEW = 'a-new-password-from-the-platform-team';
  await c.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `${NAME}-auth`, namespace: NS }, stringData: { password: NEW } });
  const changedAt = Date.now();
  await c.waitFor(async () => (await Promise.all(pods().map((p) => pingWith(p.ip, NEW)))).every((r) => r === 'PONG'), 30_000, 'the new password on every pod');
  t.diagnostic(`Secret changed -> the new password works on every pod: ${Date.now() - changedAt} ms`);
  assert.deepEqual(
    await Promise.all(pods().map((p) => pingWith(p.ip, OLD!))),
    ['PONG', 'PONG', 'PONG'],
    'the old password still works during the grace period',
  );
  assert.match(c.get('redises', NAME, NS)?.metadata.annotations?.[PASSWORD_GRACE_ANNOTATION] ?? '', /"default":/, 'the grace period is recorded on the Redis');

  await c.waitFor(
    async () => (await Promise.all(pods().map(async (p) => `${await pingWith(p.ip, OLD!)}/${await pingWith(p.ip, NEW)}`))).every((r) => r === 'WRONGPASS/PONG'),
    GRACE_SECONDS * 1000 + 30_000,
    'only the new password on every pod after the grace period',
  );
  t.diagnostic(`Secret changed -> the old password refused everywhere: ${Date.now() - changedAt} ms (grace ${GRACE_SECONDS} s)`);
  await sleep(2500);
  clearInterval(timer);
  await writer.stop();

  assert.deepEqual(notReady, [], 'no pod was ever NotReady: no probe failed');
  const after = Object.fromEntries(c.pods(NAME).map((p) => [p.metadata.name, { uid: p.metadata.uid, restarts: restartsOf(p) }]));
  assert.deepEqual(after, before, 'no pod was replaced and no container restarted');
  assert.ok(allLinked(c, 3), 'every replica still linked');
  assert.equal(c.pods(NAME).find((p) => p.metadata.labels?.[ROLE_LABEL] === 'master')?.metadata.name, master, 'the master never changed');
  await c.waitFor(() => c.events({ reason: 'PasswordGraceEnded' }).length > 0, 10_000, 'the PasswordGraceEnded Event');
  assert.equal(c.events({ reason: 'PasswordGraceStarted' }).length, 1);
  assert.deepEqual(c.events({ reason: 'FailoverStarted' }), []);
  await assertNothingLost(t, c, writer, 3);
});

function restartsOf(p: object): number {
  const status = (p as { status?: { containerStatuses?: Array<{ restartCount?: number }> } }).status;
  return (status?.containerStatuses ?? []).reduce((n, s) => n + (s.restartCount ?? 0), 0);
}
