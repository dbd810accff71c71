// Update documents: validation, MongoDB numeric typing for $inc/$mul/$min/$max on Long and
// Decimal128 (mingo's updater only does JS-number arithmetic), $currentDate from the injected clock,
// $setOnInsert on upserts; everything else is applied by mingo's updater.
import { Timestamp } from 'bson';
import { update as mingoUpdate } from 'mingo';
import { compare as mingoCompare } from 'mingo/util';
import { bsonType, isNumeric, numericOp, toComparable, toStorable, valueKey } from './bson-values';
import { StoreError, StoreErrorCode, type Document, type Filter } from './types';

const MINGO_OPERATORS = new Set([
  '$set', '$unset', '$inc', '$mul', '$min', '$max', '$push', '$pull', '$pullAll', '$addToSet', '$pop', '$rename', '$bit',
]);
const STORE_OPERATORS = new Set(['$currentDate', '$setOnInsert']);

export interface PreparedUpdate {
  readonly operators: Record<string, Document>;
}

function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Validates an update document once per operation; throws a StoreError the caller can report. */
export function prepareUpdate(spec: unknown): PreparedUpdate {
  if (Array.isArray(spec)) throw StoreError.badValue('Aggregation pipeline updates are not supported; use update operators such as $set');
  if (!isPlainObject(spec)) throw StoreError.failedToParse('Update must be an object of update operators');
  const keys = Object.keys(spec);
  if (keys.length === 0) throw StoreError.failedToParse('Update document requires atomic operators');
  const operators: Record<string, Document> = {};
  const paths: string[] = [];
  for (const op of keys) {
    if (!op.startsWith('$')) throw StoreError.failedToParse(`Update document requires atomic operators; found field '${op}'`);
    if (!MINGO_OPERATORS.has(op) && !STORE_OPERATORS.has(op)) throw StoreError.failedToParse(`Unknown modifier: ${op}`);
    const args = spec[op];
    if (!isPlainObject(args)) throw StoreError.failedToParse(`Modifiers operate on fields but we found a non-object argument for ${op}`);
    const normalised = toStorable(args, op) as Document;
    for (const [path, arg] of Object.entries(normalised)) {
      if (path === '') throw StoreError.badValue(`An empty update path is not valid (${op})`);
      if ((op === '$inc' || op === '$mul') && !isNumeric(arg)) {
        throw new StoreError(`Cannot ${op === '$inc' ? 'increment' : 'multiply'} with non-numeric argument: {${path}: ${String(arg)}}`, StoreErrorCode.TypeMismatch, 'TypeMismatch');
      }
      if (op === '$rename') {
        if (typeof arg !== 'string' || arg === '') throw StoreError.badValue(`The 'to' field for $rename must be a non-empty string: ${path}`);
        paths.push(arg);
      }
      if (op === '$currentDate' && !isCurrentDateSpec(arg)) {
        throw StoreError.badValue(`${path} must be true or {$type: "date" | "timestamp"} for $currentDate`);
      }
      paths.push(path);
    }
    operators[op] = normalised;
  }
  checkConflicts(paths);
  return { operators };
}

function isCurrentDateSpec(arg: unknown): boolean {
  if (arg === true) return true;
  return isPlainObject(arg) && Object.keys(arg).length === 1 && (arg.$type === 'date' || arg.$type === 'timestamp');
}

function checkConflicts(paths: string[]): void {
  const split = paths.map((p) => p.split('.'));
  for (let i = 0; i < split.length; i++) {
    for (let j = i + 1; j < split.length; j++) {
      const [a, b] = [split[i], split[j]];
      const shared = Math.min(a.length, b.length);
      if (a.slice(0, shared).every((seg, k) => seg === b[k])) {
        throw new StoreError(`Updating the path '${paths[j]}' would create a conflict at '${a.slice(0, shared).join('.')}'`, StoreErrorCode.ConflictingUpdateOperators, 'ConflictingUpdateOperators');
      }
    }
  }
}

const UNRESOLVABLE = Symbol('unresolvable');

/** The value at a dotted path, or UNRESOLVABLE when the path fans out over an array. */
function valueAtPath(doc: Document, path: string): unknown {
  let current: unknown = doc;
  for (const segment of path.split('.')) {
    if (segment.startsWith('$')) return UNRESOLVABLE;
    if (current === undefined || current === null) return undefined;
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment)) return UNRESOLVABLE;
      current = current[Number(segment)];
    } else if (isPlainObject(current)) {
      current = current[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

function zeroLike(value: unknown): unknown {
  return numericOp(value as never, 0, 'mul');
}

/** Rewrites numeric operators on plain paths into $set with MongoDB's numeric typing. */
function resolveNumericOperators(doc: Document, operators: Record<string, Document>, set: Document): void {
  for (const op of ['$inc', '$mul', '$min', '$max'] as const) {
    const args = operators[op];
    if (!args) continue;
    const remaining: Document = {};
    for (const [path, arg] of Object.entries(args)) {
      const current = valueAtPath(doc, path);
      if (current === UNRESOLVABLE) {
        remaining[path] = arg;
        continue;
      }
      if (op === '$min' || op === '$max') {
        const order = current === undefined ? 0 : mingoCompare(toComparable(arg), toComparable(current));
        if (current === undefined || (op === '$min' ? order < 0 : order > 0)) set[path] = arg;
        continue;
      }
      if (current === undefined) {
        set[path] = op === '$inc' ? arg : zeroLike(arg);
      } else if (isNumeric(current)) {
        set[path] = numericOp(current, arg as never, op === '$inc' ? 'add' : 'mul');
      } else {
        throw new StoreError(`Cannot apply ${op} to a value of non-numeric type: field '${path}' holds ${bsonType(current) ?? typeof current}`, StoreErrorCode.TypeMismatch, 'TypeMismatch');
      }
    }
    if (Object.keys(remaining).length) operators[op] = remaining;
    else delete operators[op];
  }
}

export interface ApplyContext {
  isInsert: boolean;
  now: Date;
  /** The operation's filter, which the positional `$` operator refers to. */
  filter: Filter;
}

/**
 * Applies a prepared update to a private copy of a stored document (mutating that copy).
 * Returns whether anything changed.
 */
export function applyUpdate(doc: Document, prepared: PreparedUpdate, ctx: ApplyContext): boolean {
  const operators: Record<string, Document> = { ...prepared.operators };
  const set: Document = { ...(operators.$set ?? {}) };
  const setOnInsert = operators.$setOnInsert;
  delete operators.$setOnInsert;
  if (ctx.isInsert && setOnInsert) Object.assign(set, setOnInsert);
  const currentDate = operators.$currentDate;
  delete operators.$currentDate;
  if (currentDate) {
    for (const [path, spec] of Object.entries(currentDate)) {
      set[path] = isPlainObject(spec) && spec.$type === 'timestamp'
        ? new Timestamp({ t: Math.floor(ctx.now.getTime() / 1000), i: 1 })
        : new Date(ctx.now.getTime());
    }
  }
  if ('_id' in set) {
    // mingo refuses any update path on `_id`; MongoDB allows it on insert and when it is unchanged.
    if (ctx.isInsert) doc._id = set._id;
    else if (valueKey(set._id) !== valueKey(doc._id)) throw immutableIdError();
    delete set._id;
  }
  resolveNumericOperators(doc, operators, set);
  if (Object.keys(set).length) operators.$set = set;
  else delete operators.$set;
  if (Object.keys(operators).length === 0) return false;
  const idBefore = valueKey(doc._id);
  let changed: string[];
  // mingo treats the condition as a precondition too, so it is passed only for the positional `$`.
  const positional = Object.values(operators).some((args) => Object.keys(args).some((p) => /(^|\.)\$(\.|$)/.test(p)));
  try {
    changed = mingoUpdate(doc, operators, undefined, positional ? ctx.filter : undefined, { cloneMode: 'copy' });
  } catch (error) {
    throw StoreError.badValue(`Invalid update: ${(error as Error).message}`);
  }
  if (!ctx.isInsert && valueKey(doc._id) !== idBefore) {
    throw immutableIdError();
  }
  return changed.length > 0;
}

function immutableIdError(): StoreError {
  return new StoreError("Performing an update on the path '_id' would modify the immutable field '_id'", StoreErrorCode.ImmutableField, 'ImmutableField');
}

/** Validates a replacement document (no update operators at the top level). */
export function prepareReplacement(replacement: unknown): Document {
  if (!isPlainObject(replacement)) throw StoreError.badValue('Replacement must be a document');
  for (const key of Object.keys(replacement)) {
    if (key.startsWith('$')) throw StoreError.badValue(`Replacement document must not contain update operators (found ${key})`);
  }
  return toStorable(replacement) as Document;
}

/** The document an upsert starts from: the filter's equality conditions, as MongoDB seeds it. */
export function seedFromFilter(filter: Filter): Document {
  const seed: Document = {};
  collectEqualities(filter, seed);
  return seed;
}

function collectEqualities(filter: Filter, seed: Document): void {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value) if (isPlainObject(part)) collectEqualities(part, seed);
      continue;
    }
    if (key.startsWith('$')) continue;
    if (isPlainObject(value) && Object.keys(value).some((k) => k.startsWith('$'))) {
      if ('$eq' in value) setPath(seed, key, toStorable(value.$eq));
      continue;
    }
    if (value instanceof RegExp) continue;
    setPath(seed, key, toStorable(value));
  }
}

function setPath(target: Document, path: string, value: unknown): void {
  const segments = path.split('.');
  let current = target;
  for (const segment of segments.slice(0, -1)) {
    if (!isPlainObject(current[segment])) current[segment] = {};
    current = current[segment] as Document;
  }
  current[segments[segments.length - 1]] = value;
}
