// CRON schedules of SCHEDULED triggers: parsing, errors, and the next firing time (UTC).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CronSyntaxError, parseCron } from '../../runtime/triggers/cron';

const at = (iso: string) => new Date(iso);
const nextAfter = (expression: string, iso: string) => parseCron(expression).next(at(iso)).toISOString();

describe('parseCron', () => {
  test('next firing time of common schedules', () => {
    assert.equal(nextAfter('* * * * *', '2024-03-10T10:07:42Z'), '2024-03-10T10:08:00.000Z');
    assert.equal(nextAfter('*/15 * * * *', '2024-03-10T10:07:00Z'), '2024-03-10T10:15:00.000Z');
    assert.equal(nextAfter('*/15 * * * *', '2024-03-10T10:15:00Z'), '2024-03-10T10:30:00.000Z', 'strictly after');
    assert.equal(nextAfter('0 * * * *', '2024-12-31T23:30:00Z'), '2025-01-01T00:00:00.000Z');
    assert.equal(nextAfter('30 2 1 1 *', '2024-01-01T02:30:00Z'), '2025-01-01T02:30:00.000Z');
    assert.equal(nextAfter('0,30 8-10 * * *', '2024-03-10T10:31:00Z'), '2024-03-11T08:00:00.000Z');
    assert.equal(nextAfter('0 0 29 2 *', '2025-03-01T00:00:00Z'), '2028-02-29T00:00:00.000Z');
    assert.equal(nextAfter('59 23 31 * *', '2024-04-01T00:00:00Z'), '2024-05-31T23:59:00.000Z', 'skips April, which has no 31st');
  });

  test('names, weekday 7, steps from a start, and "?"', () => {
    // 2024-03-08 is a Friday.
    assert.equal(nextAfter('0 9 * * MON-FRI', '2024-03-08T10:00:00Z'), '2024-03-11T09:00:00.000Z');
    assert.equal(nextAfter('0 9 ? * mon-fri', '2024-03-08T08:00:00Z'), '2024-03-08T09:00:00.000Z', 'names ignore case');
    assert.equal(nextAfter('0 12 * * 7', '2024-03-08T00:00:00Z'), '2024-03-10T12:00:00.000Z', '7 is Sunday');
    assert.equal(nextAfter('0 12 * * SUN', '2024-03-08T00:00:00Z'), '2024-03-10T12:00:00.000Z');
    assert.equal(nextAfter('0 0 1 JUL,DEC ?', '2024-03-08T00:00:00Z'), '2024-07-01T00:00:00.000Z');
    const minutes = parseCron('7/20 * * * *');
    assert.deepEqual([0, 1, 2, 3].reduce<string[]>((out) => [...out, minutes.next(at(out.at(-1) ?? '2024-03-08T00:00:00Z')).toISOString()], []),
      ['2024-03-08T00:07:00.000Z', '2024-03-08T00:27:00.000Z', '2024-03-08T00:47:00.000Z', '2024-03-08T01:07:00.000Z']);
    assert.equal(nextAfter('10-40/15 * * * *', '2024-03-08T00:26:00Z'), '2024-03-08T00:40:00.000Z');
  });

  test('with both day fields restricted, a day matching either fires', () => {
    // 2024-09-13 is a Friday; the next 13th after it is 2024-10-13, and Fridays come weekly.
    const schedule = parseCron('0 0 13 * FRI');
    assert.equal(schedule.next(at('2024-09-13T00:00:00Z')).toISOString(), '2024-09-20T00:00:00.000Z');
    assert.ok(schedule.matches(at('2024-10-13T00:00:30Z')), 'the 13th, a Sunday');
    assert.ok(schedule.matches(at('2024-10-04T00:00:00Z')), 'a Friday');
    assert.ok(!schedule.matches(at('2024-10-05T00:00:00Z')));
    assert.ok(!parseCron('0 0 13 * *').matches(at('2024-10-04T00:00:00Z')), 'only the day of month restricts');
    assert.ok(!parseCron('0 0 * * FRI').matches(at('2024-10-13T00:00:00Z')), 'only the weekday restricts');
  });

  test('bad schedules are refused with a reason', () => {
    const refused = (expression: string, reason: RegExp) => assert.throws(() => parseCron(expression), (e: unknown) => e instanceof CronSyntaxError && reason.test(e.message), expression);
    refused('* * * *', /five fields.*got 4/);
    refused('* * * * * *', /five fields.*got 6/);
    refused('', /got 0/);
    refused('60 * * * *', /minute 60 is out of range 0-59/);
    refused('* 24 * * *', /hour 24 is out of range/);
    refused('* * 0 * *', /day of month 0 is out of range 1-31/);
    refused('* * * 13 *', /month 13/);
    refused('* * * * 8', /day of week 8/);
    refused('*/0 * * * *', /step "0" .* positive/);
    refused('5-1 * * * *', /runs backwards/);
    refused('MON * * * *', /"MON" is not a valid minute/);
    refused('* * * FOO *', /"FOO" is not a valid month \(use 1-12 or JAN-DEC\)/);
    refused('1,,2 * * * *', /empty list item/);
    refused('? * * * *', /"\?" is not a valid minute/);
    refused('0 0 30 2 *', /never fires/);
    refused('0 0 31 4,6 *', /never fires/);
  });

  test('next() is the first matching minute after the given time (checked minute by minute)', () => {
    const field = (min: number, max: number) => fc.oneof(
      fc.constant('*'),
      fc.integer({ min, max }).map(String),
      fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
      fc.tuple(fc.integer({ min, max }), fc.integer({ min: 1, max: 7 })).map(([a, s]) => `${a}/${s}`),
      fc.integer({ min: 1, max: 9 }).map((s) => `*/${s}`),
      fc.uniqueArray(fc.integer({ min, max }), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(',')),
    );
    const expression = fc.tuple(field(0, 59), field(0, 23), fc.oneof(fc.constant('*'), field(1, 28)), fc.constant('*'), field(0, 6)).map((parts) => parts.join(' '));
    const start = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }).map((ms) => new Date(ms));
    fc.assert(fc.property(expression, start, (text, from) => {
      const schedule = parseCron(text);
      const next = schedule.next(from);
      assert.ok(next.getTime() > from.getTime());
      assert.equal(next.getUTCSeconds(), 0);
      assert.ok(schedule.matches(next), `${text} matches ${next.toISOString()}`);
      // Days matching the two day fields come at least every month, so a two-month scan is enough.
      const scanEnd = Math.min(next.getTime(), from.getTime() + 62 * 24 * 3600_000);
      for (let t = Math.floor(from.getTime() / 60_000) * 60_000 + 60_000; t < scanEnd; t += 60_000) {
        if (schedule.matches(new Date(t))) assert.fail(`${text}: ${new Date(t).toISOString()} matches before ${next.toISOString()}`);
      }
    }), { numRuns: 150 });
  });
});
