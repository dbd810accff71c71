// CRON schedules of SCHEDULED triggers: five fields (minute hour day-of-month month day-of-week), read in UTC
// as the platform does. Each field takes `*`, a value, a range `a-b`, a step `*/n`, `a/n` or `a-b/n`, and lists
// of those; months and weekdays also take names (JAN-DEC, SUN-SAT); weekday 7 is Sunday; `?` means "any" in
// the two day fields. When both day fields are restricted a day matching either one fires, as in standard cron.

export class CronSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CronSyntaxError';
  }
}

export interface CronSchedule {
  readonly expression: string;
  /** Whether the schedule fires at this minute (seconds are ignored). */
  matches(date: Date): boolean;
  /** The first minute strictly after `after` at which the schedule fires. */
  next(after: Date): Date;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** `?` is accepted (day fields only). */
  anyMark?: boolean;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31, anyMark: true },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES, anyMark: true },
];

/** Longest month per month number: a day-of-month beyond it in every chosen month never comes. */
const MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const MINUTE_MS = 60_000;

interface ParsedField {
  values: Set<number>;
  /** Written as `*` or `?` (possibly with a step): does not restrict the day for the day-field rule. */
  unrestricted: boolean;
}

function parseValue(text: string, spec: FieldSpec): number {
  const byName = spec.names?.indexOf(text.toUpperCase() as never) ?? -1;
  if (byName >= 0) return byName + (spec.min === 0 ? 0 : spec.min);
  if (!/^\d+$/.test(text)) throw new CronSyntaxError(`"${text}" is not a valid ${spec.name}${spec.names ? ` (use ${spec.min}-${spec.max} or ${spec.names[0]}-${spec.names[spec.names.length - 1]})` : ''}`);
  const value = Number(text);
  if (value < spec.min || value > spec.max) throw new CronSyntaxError(`${spec.name} ${value} is out of range ${spec.min}-${spec.max}`);
  return value;
}

function parseField(text: string, spec: FieldSpec): ParsedField {
  const values = new Set<number>();
  let unrestricted = false;
  for (const term of text.split(',')) {
    if (term === '') throw new CronSyntaxError(`empty list item in the ${spec.name} field "${text}"`);
    const [range, stepText, extra] = term.split('/');
    if (extra !== undefined) throw new CronSyntaxError(`"${term}" has more than one "/" in the ${spec.name} field`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw new CronSyntaxError(`the step "${stepText}" in the ${spec.name} field must be a positive whole number`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*' || (range === '?' && spec.anyMark)) {
      if (range === '?' && stepText !== undefined) throw new CronSyntaxError(`"?" takes no step in the ${spec.name} field`);
      unrestricted = true;
      from = spec.min;
      to = spec.name === 'day of week' ? 6 : spec.max;
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (more !== undefined || a === '' || b === '') throw new CronSyntaxError(`"${range}" is not a valid range in the ${spec.name} field`);
      from = parseValue(a, spec);
      to = parseValue(b, spec);
      if (from > to) throw new CronSyntaxError(`the range "${range}" in the ${spec.name} field runs backwards`);
    } else {
      from = parseValue(range, spec);
      // `a/n` starts at a and steps to the end of the field's range.
      to = stepText !== undefined ? (spec.name === 'day of week' ? 6 : spec.max) : from;
    }
    for (let v = from; v <= to; v += step) values.add(spec.name === 'day of week' && v === 7 ? 0 : v);
  }
  if (values.size === 0) throw new CronSyntaxError(`the ${spec.name} field "${text}" selects no value`);
  return { values, unrestricted };
}

export function parseCron(expression: string): CronSchedule {
  if (typeof expression !== 'string') throw new CronSyntaxError('a schedule must be a string');
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5 || parts[0] === '') {
    throw new CronSyntaxError(`a schedule has five fields (minute hour day-of-month month day-of-week), got ${parts[0] === '' ? 0 : parts.length}: "${expression}"`);
  }
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = parts.map((part, i) => parseField(part, FIELDS[i]));
  const dayRestricted = !daysOfMonth.unrestricted;
  const weekdayRestricted = !daysOfWeek.unrestricted;
  if (dayRestricted && !weekdayRestricted) {
    const longest = Math.max(...[...months.values].map((m) => MAX_DAYS[m - 1]));
    if (Math.min(...daysOfMonth.values) > longest) throw new CronSyntaxError(`"${expression}" never fires: no chosen month has day ${Math.min(...daysOfMonth.values)}`);
  }

  const dayMatches = (date: Date): boolean => {
    const byDay = daysOfMonth.values.has(date.getUTCDate());
    const byWeekday = daysOfWeek.values.has(date.getUTCDay());
    if (dayRestricted && weekdayRestricted) return byDay || byWeekday;
    return byDay && byWeekday;
  };

  return {
    expression,
    matches(date) {
      return minutes.values.has(date.getUTCMinutes()) && hours.values.has(date.getUTCHours())
        && months.values.has(date.getUTCMonth() + 1) && dayMatches(date);
    },
    next(after) {
      let t = Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
      // Every candidate skips a whole month, day, hour or minute that cannot match, so this ends quickly;
      // the parse-time check rules out schedules that never fire.
      for (;;) {
        const d = new Date(t);
        const year = d.getUTCFullYear();
        const month = d.getUTCMonth();
        if (!months.values.has(month + 1)) { t = Date.UTC(year, month + 1, 1); continue; }
        if (!dayMatches(d)) { t = Date.UTC(year, month, d.getUTCDate() + 1); continue; }
        if (!hours.values.has(d.getUTCHours())) { t = Date.UTC(year, month, d.getUTCDate(), d.getUTCHours() + 1); continue; }
        if (!minutes.values.has(d.getUTCMinutes())) { t += MINUTE_MS; continue; }
        return d;
      }
    },
  };
}
