// The backup schedule as the CronJob controller reads it: what it accepts and refuses (naming the
// field), and the longest gap between runs, which decides when the last backup is stale.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { longestIntervalSeconds, parseCron } from '../../src/api/cron.ts';

const accepted = [
  '0 */6 * * *',
  '*/15 * * * *',
  '0 2 * * *',
  '30 1 * * MON-FRI',
  '0 0 1,15 * *',
  '5/10 * * * *',
  '0 0 ? JAN SUN',
  '@daily',
  '@hourly',
  '@weekly',
  '@yearly',
];

test('accepted schedules', async (t) => {
  for (const line of accepted) await t.test(line, () => assert.equal(parseCron(line).ok, true));
});

const refused: Array<[string, RegExp]> = [
  ['0 25 * * *', /^hour: "25" is outside 0-23$/],
  ['60 * * * *', /^minute: "60" is outside 0-59$/],
  ['0 0 0 * *', /^day of month: "0" is outside 1-31$/],
  ['0 0 * 13 *', /^month: "13" is outside 1-12$/],
  ['0 0 * * 8', /^day of week: "8" is outside 0-6$/],
  ['0 */0 * * *', /^hour: step "0" must be at least 1$/],
  ['0 5-2 * * *', /^hour: "5-2" has its start after its end$/],
  ['0 * * * FOO', /^day of week: "FOO" is not a day of week$/],
  ['0 * * *', /^needs five fields .*got 4$/],
  ['@every 1h', /^unknown descriptor @every 1h$/],
  ['TZ=UTC 0 * * * *', /time zone/],
  ['@reboot', /^unknown descriptor @reboot$/],
];

test('refused schedules name the field', async (t) => {
  for (const [line, message] of refused) {
    await t.test(line, () => {
      const r = parseCron(line);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.message, message);
    });
  }
});

const intervals: Array<[string, number | undefined]> = [
  ['0 */6 * * *', 6 * 3600],
  ['*/15 * * * *', 15 * 60],
  ['0 2 * * *', 24 * 3600],
  ['0 2 * * MON-FRI', 3 * 24 * 3600],
  ['0 0 1 * *', 31 * 24 * 3600],
  ['0 0,12 * * *', 12 * 3600],
  ['0 1,2 * * *', 23 * 3600],
  ['@weekly', 7 * 24 * 3600],
  ['0 0 30 2 *', undefined],
];

test('the longest interval between runs', async (t) => {
  for (const [line, seconds] of intervals)
    await t.test(line, () => assert.equal(longestIntervalSeconds(line), seconds));
});
