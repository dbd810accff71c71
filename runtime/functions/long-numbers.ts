// Int64 values (bson `Long`) in function code, as the platform's function engine has them: numbers in
// arithmetic and comparisons, and an int64 again when a whole number computed from them is returned.
// On the platform `args.reduce((a, b) => a + b, 0)` over `$numberLong` arguments returns
// `{"$numberLong": "15"}` (realm-core's `app: call function` reads the result as an int64), while int32
// arguments add up to an int32. A bson `Long` is an object, and `0 + long` would concatenate strings
// ("012345"); here it converts to its number (its string where a string is asked for, as in template
// literals, so a large value is printed exactly), as bson's own `Double` and `Int32` do with `valueOf`.
// JavaScript has no int64 number to carry the width through `+`, so the worker notes each call whose code
// used a Long as a number and returns that call's result, when it is a plain whole number, as a Long.
// Only the result itself is widened, never the numbers inside a returned document (those may be int32
// fields of a document the function read).
import { Long } from 'bson';

/** Calls (by id) that have started and not ended: code a call left running after it ended is not noted. */
const runningCalls = new Set<number>();
/** Running calls whose code has turned a Long into a number. */
const computedWithLongs = new Set<number>();

/**
 * Makes every Long of this thread convert to its number in arithmetic, comparisons and `Number(…)`.
 * `currentCall` names the call whose code runs (0 when none), which is then noted.
 */
export function installLongArithmetic(currentCall: () => number): void {
  Object.defineProperty(Long.prototype, Symbol.toPrimitive, {
    value: function toPrimitive(this: Long, hint: string): number | string {
      // A Timestamp is a Long too; it keeps the conversion it had (its digits).
      if (hint === 'string' || this._bsontype !== 'Long') return this.toString();
      const call = currentCall();
      if (runningCalls.has(call)) computedWithLongs.add(call);
      return this.toNumber();
    },
    writable: false, enumerable: false, configurable: false,
  });
}

/** Notes that call `callId` starts running function code. */
export function startCall(callId: number): void {
  runningCalls.add(callId);
}

/** The value call `callId` returns: a plain whole number computed with Longs becomes a Long. */
export function resultOfCall(callId: number, value: unknown): unknown {
  if (computedWithLongs.has(callId) && typeof value === 'number' && Number.isSafeInteger(value) && !Object.is(value, -0)) return Long.fromNumber(value);
  return value;
}

/** Forgets a call once it has ended, however it ended. */
export function endCall(callId: number): void {
  runningCalls.delete(callId);
  computedWithLongs.delete(callId);
}
