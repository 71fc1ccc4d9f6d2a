// The backup schedule: a CronJob schedule parsed as Kubernetes' CronJob controller (robfig/cron's
// standard parser) reads it, so the hook refuses up front, naming the field, a line the API
// server would refuse on every sync; and the longest gap between two runs, which decides when
// the last backup is "older than twice its interval". Pure and deterministic.
// Invariants: accepts only what the CronJob controller accepts (five fields, numbers, ranges,
// steps, lists, names, `?`, the @descriptors; never TZ=, @every or @reboot); every refusal says
// which of the five fields is wrong and why.

export interface CronSchedule {
  minutes: number[];
  hours: number[];
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  /** robfig/cron: when both day fields are restricted, a day matches when EITHER does. */
  dayOr: boolean;
}

const DESCRIPTORS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  nameBase?: number;
}

const FIELDS: FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, nameBase: 1 },
  { name: 'day of week', min: 0, max: 6, names: DAYS, nameBase: 0 },
];

type FieldResult = { ok: true; values: number[]; star: boolean } | { ok: false; message: string };

function value(text: string, f: FieldSpec): number | undefined {
  if (/^[0-9]+$/.test(text)) return Number(text);
  const i = f.names?.indexOf(text.toUpperCase()) ?? -1;
  return i >= 0 ? i + (f.nameBase ?? 0) : undefined;
}

function parseField(text: string, f: FieldSpec): FieldResult {
  const out = new Set<number>();
  let star = false;
  for (const part of text.split(',')) {
    const m = /^([^/]+)(?:\/([0-9]+))?$/.exec(part);
    if (!m) return { ok: false, message: `"${part}" is not a value, range or step` };
    const [, range, stepText] = m as unknown as [string, string, string | undefined];
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) return { ok: false, message: `step "${stepText ?? ''}" must be at least 1` };
    let lo: number;
    let hi: number;
    if (range === '*' || range === '?') {
      [lo, hi] = [f.min, f.max];
      if (stepText === undefined) star = true;
    } else {
      const [a, b, extra] = range.split('-');
      const first = a === undefined ? undefined : value(a, f);
      const last = b === undefined ? first : value(b, f);
      if (extra !== undefined || first === undefined || last === undefined)
        return { ok: false, message: `"${range}" is not a ${f.name}` };
      // robfig/cron: "5/10" means 5-max/10.
      [lo, hi] = [first, b === undefined && stepText !== undefined ? f.max : last];
    }
    if (lo < f.min || hi > f.max) return { ok: false, message: `"${part}" is outside ${f.min}-${f.max}` };
    if (lo > hi) return { ok: false, message: `"${part}" has its start after its end` };
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return { ok: true, values: [...out].sort((a, b) => a - b), star };
}

export type CronResult = { ok: true; schedule: CronSchedule } | { ok: false; message: string };

export function parseCron(line: string): CronResult {
  const trimmed = line.trim();
  if (/^(TZ|CRON_TZ)=/.test(trimmed))
    return { ok: false, message: 'a time zone cannot be part of the schedule (CronJobs refuse TZ=)' };
  if (trimmed.startsWith('@') && DESCRIPTORS[trimmed] === undefined)
    return { ok: false, message: `unknown descriptor ${trimmed}` };
  const parts = (DESCRIPTORS[trimmed] ?? trimmed).split(/\s+/);
  if (parts.length !== 5)
    return {
      ok: false,
      message: `needs five fields (minute hour day-of-month month day-of-week), got ${parts.length}`,
    };
  const parsed: Array<{ values: number[]; star: boolean }> = [];
  for (const [i, f] of FIELDS.entries()) {
    const r = parseField(parts[i] as string, f);
    if (!r.ok) return { ok: false, message: `${f.name}: ${r.message}` };
    parsed.push(r);
  }
  const [minutes, hours, days, months, weekdays] = parsed as [
    (typeof parsed)[0],
    (typeof parsed)[0],
    (typeof parsed)[0],
    (typeof parsed)[0],
    (typeof parsed)[0],
  ];
  return {
    ok: true,
    schedule: {
      minutes: minutes.values,
      hours: hours.values,
      days: new Set(days.values),
      months: new Set(months.values),
      weekdays: new Set(weekdays.values),
      dayOr: !days.star && !weekdays.star,
    },
  };
}

function dayMatches(s: CronSchedule, date: Date): boolean {
  if (!s.months.has(date.getUTCMonth() + 1)) return false;
  const dom = s.days.has(date.getUTCDate());
  const dow = s.weekdays.has(date.getUTCDay());
  return s.dayOr ? dom || dow : dom && dow;
}

const DAY_MS = 86_400_000;
/** Four years and a day: every weekday and month-day combination, leap days included, comes round. */
const HORIZON_DAYS = 4 * 366 + 1;
const cache = new Map<string, number | undefined>();

/**
 * The longest time between two consecutive runs, in seconds (undefined for a schedule that never
 * runs, like Feb 30). Computed over a fixed four-year window starting 2024-01-01, so it is a pure
 * function of the line. Cached: the hook asks for it on every sync.
 */
export function longestIntervalSeconds(line: string): number | undefined {
  if (cache.has(line)) return cache.get(line);
  const parsed = parseCron(line);
  let result: number | undefined;
  if (parsed.ok) {
    const s = parsed.schedule;
    const times = s.hours.flatMap((h) => s.minutes.map((m) => h * 60 + m));
    let gap = 0;
    for (let i = 1; i < times.length; i++) gap = Math.max(gap, (times[i] as number) - (times[i - 1] as number));
    const start = Date.UTC(2024, 0, 1);
    let previousDay: number | undefined;
    let firstDay: number | undefined;
    for (let d = 0; d < HORIZON_DAYS; d++) {
      if (!dayMatches(s, new Date(start + d * DAY_MS))) continue;
      if (previousDay !== undefined)
        gap = Math.max(gap, (d - previousDay) * 1440 - (times.at(-1) as number) + (times[0] as number));
      firstDay ??= d;
      previousDay = d;
    }
    result = firstDay === undefined || times.length === 0 ? undefined : gap === 0 ? 1440 * 365 * 60 : gap * 60;
  }
  if (cache.size > 1000) cache.clear();
  cache.set(line, result);
  return result;
}
