// The runtime's log: records with a level, a message and structured fields, so one record can be printed as
// a text line (`asl serve` in a terminal), sent to the editor as a typed message, or written as a JSON line.
// Secrets and tokens never go into a record: request records carry the user id, never credentials.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** From the most to the least severe; a logger at one level keeps that level and the ones before it. */
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** One answered HTTP request, as logged and as `/logs?co_id=<id>` serves it. */
export interface RequestLogEntry {
  /** The request id error bodies link to. */
  co_id: string;
  /** When the request arrived (ISO 8601). */
  time: string;
  method: string;
  /** The path without the query string (queries may carry confirmation tokens). */
  path: string;
  status: number;
  /** Milliseconds from arrival to the end of the response. */
  ms: number;
  /** The user of the request's access or refresh token, when the runtime signed it. */
  user_id?: string;
  /** The error answered, for error responses. */
  error?: string;
  error_code?: string;
  /** The client went away before the response ended. */
  aborted?: true;
}

/** Structured facts a record carries beside its message. */
export interface LogFields {
  request?: RequestLogEntry;
}

export interface LogRecord extends LogFields {
  /** ISO 8601. */
  time: string;
  level: LogLevel;
  message: string;
}

/**
 * What the runtime logs through. `info`/`warn`/`error` are all a logger must have (a plain object of three
 * functions is one); `debug` and `enabled` are optional, so a caller that builds a costly message asks first.
 */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  debug?(message: string, fields?: LogFields): void;
  /** Whether records of `level` are kept; absent means every level is. */
  enabled?(level: LogLevel): boolean;
}

/** Whether `log` keeps records of `level`. */
export function logs(log: Logger, level: LogLevel): boolean {
  return log.enabled ? log.enabled(level) : level !== 'debug' || log.debug !== undefined;
}

/** A logger that keeps the records of `level` and more severe ones and hands each to `write`. */
export function createLogger(level: LogLevel, write: (record: LogRecord) => void, clock: () => Date = () => new Date()): Logger {
  const rank = LOG_LEVELS.indexOf(level);
  const enabled = (l: LogLevel) => LOG_LEVELS.indexOf(l) <= rank;
  const at = (l: LogLevel) => (message: string, fields?: LogFields) => {
    if (enabled(l)) write({ time: clock().toISOString(), level: l, message, ...fields });
  };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), enabled };
}

/** `12:34:56.789 warning: message` — the terminal form of a record (time of day, UTC). */
export function formatLogLine(record: LogRecord): string {
  const prefix = record.level === 'info' ? '' : `${record.level === 'warn' ? 'warning' : record.level}: `;
  return `${record.time.slice(11, 23)} ${prefix}${record.message}`;
}

export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

export function isLogFormat(value: unknown): value is LogFormat {
  return typeof value === 'string' && (LOG_FORMATS as readonly string[]).includes(value);
}

/**
 * `{"time":…,"level":"info","msg":…,"request":{…}}` — one record as one JSON object on one line, for log
 * collectors. It holds what the text line holds (the same message; a request's entry as `/logs` serves it),
 * so it carries no more than the text log does: no token, password, body or query string.
 */
export function formatJsonLine(record: LogRecord): string {
  const { time, level, message, ...fields } = record;
  return JSON.stringify({ time, level, msg: message, ...fields });
}

/** A record in the chosen format, without its line end. */
export function formatLogRecord(record: LogRecord, format: LogFormat): string {
  return format === 'json' ? formatJsonLine(record) : formatLogLine(record);
}

/** `GET /api/client/v2.0/app/x/graphql 200 3.1 ms user 5f…` — a request record's message. */
export function formatRequestLine(entry: RequestLogEntry): string {
  const user = entry.user_id ? ` user ${entry.user_id}` : '';
  const error = entry.error_code ? ` ${entry.error_code}` : '';
  return `${entry.method} ${entry.path} ${entry.status}${entry.aborted ? ' (aborted)' : ''} ${entry.ms} ms${user}${error} co_id ${entry.co_id}`;
}

/** The most recent request entries, kept in memory for `/logs?co_id=…`; the oldest go first. */
export class RequestLog {
  private readonly entries: RequestLogEntry[] = [];
  private readonly byId = new Map<string, RequestLogEntry>();
  private next = 0;

  constructor(readonly capacity = 1000) {}

  add(entry: RequestLogEntry): void {
    if (this.entries.length < this.capacity) {
      this.entries.push(entry);
    } else {
      this.byId.delete(this.entries[this.next]!.co_id);
      this.entries[this.next] = entry;
      this.next = (this.next + 1) % this.capacity;
    }
    this.byId.set(entry.co_id, entry);
  }

  find(coId: string): RequestLogEntry | undefined {
    return this.byId.get(coId);
  }

  /** Up to `limit` entries, newest first. */
  recent(limit: number): RequestLogEntry[] {
    const ordered = [...this.entries.slice(this.next), ...this.entries.slice(0, this.next)];
    return ordered.reverse().slice(0, limit);
  }
}

/** One of an app's recent warnings and errors, in the shape of the Admin API's `logs` entries. */
export interface AppLogEntry { _id: string; type: 'LOG'; started: string; completed: string; messages: string[]; error?: string }

/**
 * A logger that passes every record on and keeps the newest `kept` warnings and errors, so the Admin API's
 * `GET …/logs` (`errors_only`) can answer what went wrong in one app.
 */
export function recordingLogger(inner: Logger, kept = 200): { logger: Logger; recent(): AppLogEntry[] } {
  const entries: AppLogEntry[] = [];
  let next = 0;
  const keep = (message: string, isError: boolean) => {
    const time = new Date().toISOString();
    entries.push({ _id: (next++).toString(16).padStart(24, '0'), type: 'LOG', started: time, completed: time, messages: [message], ...(isError ? { error: message } : {}) });
    if (entries.length > kept) entries.shift();
  };
  const logger: Logger = {
    info: (message, fields) => inner.info(message, fields),
    warn: (message, fields) => { keep(message, false); inner.warn(message, fields); },
    error: (message, fields) => { keep(message, true); inner.error(message, fields); },
    ...(inner.debug ? { debug: (message: string, fields?: LogFields) => inner.debug!(message, fields) } : {}),
    ...(inner.enabled ? { enabled: (level: LogLevel) => inner.enabled!(level) } : {}),
  };
  return { logger, recent: () => [...entries].reverse() };
}
