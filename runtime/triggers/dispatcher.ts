// Runs an app's triggers: DATABASE triggers on the store's change events, AUTHENTICATION triggers on user
// creation, login and deletion, SCHEDULED triggers on their CRON schedule. One dispatcher serves one loaded
// version of the app; a reload disposes it and builds the next. A trigger's failure is logged under its name
// and never reaches the write, login or timer that fired it.
import { EJSON } from 'bson';
import { Aggregator, Query, withLinearRegexes } from '../store/regex';
import { isObject } from '../../core/json';
import { isClusterSource, type AppModel, type Trigger } from '../../core/model';
import type { Clock } from '../auth/tokens';
import type { FunctionUser } from '../functions';
import type { Logger } from '../http/server';
import { toComparable } from '../store/bson-values';
import type { ChangeEvent, ChangeOperationType } from '../store/changes';
import type { Document } from '../store/types';
import { parseCron, type CronSchedule } from './cron';

export type AuthOperationType = 'CREATE' | 'LOGIN' | 'DELETE';

/** What an AUTHENTICATION trigger's function receives. */
export interface AuthTriggerEvent {
  operationType: AuthOperationType;
  /** Provider types of the identities involved (all of the user's for DELETE). */
  providers: string[];
  /** The user as functions see it (`context.user`'s shape). */
  user: FunctionUser;
  time: Date;
}

export interface TriggerDispatcherOptions {
  app: Pick<AppModel, 'triggers' | 'dataSources'>;
  /** Runs an app function as system with the given arguments. */
  runFunction(name: string, args: unknown[]): Promise<unknown>;
  log: Logger;
  clock?: Clock;
  setTimeout?: (callback: () => void, ms: number) => unknown;
  clearTimeout?: (handle: unknown) => void;
}

export interface TriggerDispatcher {
  /** Whether some DATABASE trigger listens to this operation on this collection (lets the store skip work). */
  wants(database: string, collection: string, operationType: ChangeOperationType): boolean;
  /** Hands a store change to the DATABASE triggers it concerns; returns at once, never throws. */
  onChange(change: ChangeEvent): void;
  /** Runs the AUTHENTICATION triggers for the event; resolves when they have finished, never rejects. */
  onAuthEvent(event: Omit<AuthTriggerEvent, 'time'> & { time?: Date }): Promise<void>;
  /** Arms the SCHEDULED triggers' timers. */
  start(): void;
  /** Disarms them; runs already started finish. */
  stop(): void;
  /** Resolves once every trigger run started so far has finished. */
  idle(): Promise<void>;
  /** Stops everything and takes no more events; resolves once runs in progress have finished. */
  dispose(): Promise<void>;
}

const OPERATION_TYPES: Record<string, ChangeOperationType> = { INSERT: 'insert', UPDATE: 'update', REPLACE: 'replace', DELETE: 'delete' };
/** Timers wake at least this often, so a schedule survives the machine sleeping through a long timer. */
const MAX_TIMER_MS = 60_000;

interface DatabaseTrigger {
  name: string;
  functionName: string;
  database?: string;
  collection?: string;
  operations: Set<ChangeOperationType>;
  fullDocument: boolean;
  fullDocumentBeforeChange: boolean;
  unordered: boolean;
  match?: Query;
  project?: Aggregator;
  /** Ordered triggers: the delivery of the previous event, which the next one waits for. */
  tail: Promise<void>;
}

interface AuthTrigger {
  name: string;
  functionName: string;
  operationType: string;
  providers: Set<string>;
}

interface ScheduledTrigger {
  name: string;
  functionName: string;
  schedule: CronSchedule;
  due?: number;
  timer?: unknown;
}

const stringOf = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function createTriggerDispatcher(options: TriggerDispatcherOptions): TriggerDispatcher {
  const { log, runFunction } = options;
  const clock = options.clock ?? { now: () => Date.now() };
  const arm = options.setTimeout ?? ((callback: () => void, ms: number) => setTimeout(callback, ms).unref());
  const disarm = options.clearTimeout ?? ((handle: unknown) => clearTimeout(handle as NodeJS.Timeout));
  const clusterSources = new Set(options.app.dataSources.filter(isClusterSource).map((ds) => ds.name));
  const database: DatabaseTrigger[] = [];
  const authentication: AuthTrigger[] = [];
  const scheduled: ScheduledTrigger[] = [];
  const running = new Set<Promise<void>>();
  let started = false;
  let disposed = false;

  for (const trigger of options.app.triggers) {
    if (trigger.disabled) continue;
    const functionName = processorOf(trigger);
    if (!functionName) continue;
    try {
      if (trigger.type === 'DATABASE') {
        const compiled = compileDatabaseTrigger(trigger, functionName);
        if (compiled) database.push(compiled);
      } else if (trigger.type === 'AUTHENTICATION') {
        authentication.push(compileAuthTrigger(trigger, functionName));
      } else if (trigger.type === 'SCHEDULED') {
        scheduled.push({ name: trigger.name, functionName, schedule: parseCron(String(trigger.config.schedule ?? '')) });
      } else {
        log.warn(`trigger "${trigger.name}": unknown type "${trigger.type}"; it does not run`);
      }
    } catch (error) {
      log.error(`trigger "${trigger.name}" does not run: ${messageOf(error)}`);
    }
  }

  /** The function the trigger's events go to; undefined (after saying why) when none runs locally. */
  function processorOf(trigger: Trigger): string | undefined {
    if (trigger.functionName) return trigger.functionName;
    const processors = isObject(trigger.file.value) ? trigger.file.value.event_processors : undefined;
    if (isObject(processors) && 'AWS_EVENTBRIDGE' in processors) {
      log.warn(`trigger "${trigger.name}" sends its events to AWS EventBridge, which is not supported locally; it does not run`);
    } else {
      log.warn(`trigger "${trigger.name}" names no function to run; it does not run`);
    }
    return undefined;
  }

  function compileDatabaseTrigger(trigger: Trigger, functionName: string): DatabaseTrigger | undefined {
    const config = trigger.config;
    const service = stringOf(config.service_name);
    if (service !== undefined && !clusterSources.has(service)) {
      log.warn(`trigger "${trigger.name}": "${service}" is not a linked cluster data source of this app; it does not run`);
      return undefined;
    }
    const types = Array.isArray(config.operation_types) ? config.operation_types.map(String) : [];
    const operations = new Set(types.flatMap((type) => (OPERATION_TYPES[type.toUpperCase()] ? [OPERATION_TYPES[type.toUpperCase()]] : [])));
    const unsupported = types.filter((type) => !OPERATION_TYPES[type.toUpperCase()]);
    if (unsupported.length > 0) log.warn(`trigger "${trigger.name}": the local store reports no ${unsupported.join(', ')} events`);
    const match = isObject(config.match) && Object.keys(config.match).length > 0
      ? new Query(withLinearRegexes(toComparable(EJSON.deserialize(config.match, { relaxed: true })) as Document), { scriptEnabled: false })
      : undefined;
    const project = isObject(config.project) && Object.keys(config.project).length > 0
      ? new Aggregator([{ $project: EJSON.deserialize(config.project, { relaxed: true }) }], { scriptEnabled: false })
      : undefined;
    // mingo checks a projection only when it runs: try it once so a bad one is reported now, not per event.
    project?.run([{}]);
    return {
      name: trigger.name, functionName,
      database: stringOf(config.database), collection: stringOf(config.collection),
      operations, match, project,
      fullDocument: config.full_document === true,
      fullDocumentBeforeChange: config.full_document_before_change === true,
      unordered: config.unordered === true,
      tail: Promise.resolve(),
    };
  }

  function compileAuthTrigger(trigger: Trigger, functionName: string): AuthTrigger {
    const providers = Array.isArray(trigger.config.providers) ? trigger.config.providers.map(String) : [];
    return { name: trigger.name, functionName, operationType: String(trigger.config.operation_type ?? '').toUpperCase(), providers: new Set(providers) };
  }

  const listens = (t: DatabaseTrigger, db: string, coll: string, op: ChangeOperationType) =>
    t.operations.has(op) && (t.database === undefined || t.database === db) && (t.collection === undefined || t.collection === coll);

  /** Runs one delivery, logging its failure under the trigger's name; tracked so `idle()` can wait for it. */
  function track(name: string, functionName: string, args: unknown[]): Promise<void> {
    // Started inside a promise so that even a runner throwing synchronously cannot reach the writer.
    const run = new Promise((resolve) => resolve(runFunction(functionName, args))).then(
      () => undefined,
      (error) => log.error(`trigger "${name}" failed: function "${functionName}": ${messageOf(error)}`),
    );
    running.add(run);
    void run.then(() => running.delete(run));
    return run;
  }

  /** The event as this trigger's settings shape it, or undefined when its `match` filters it out. */
  function eventFor(trigger: DatabaseTrigger, change: ChangeEvent): Document | undefined {
    const { fullDocument, fullDocumentBeforeChange, updateDescription, ...base } = change;
    const event: Document = { ...base };
    // Inserts and replaces always carry the new document; updates only when `full_document` asks for it.
    if (fullDocument && (change.operationType !== 'update' || trigger.fullDocument)) event.fullDocument = fullDocument;
    if (updateDescription) event.updateDescription = updateDescription;
    if (fullDocumentBeforeChange && trigger.fullDocumentBeforeChange) event.fullDocumentBeforeChange = fullDocumentBeforeChange;
    if (trigger.match && !trigger.match.test(toComparable(event) as Document)) return undefined;
    return trigger.project ? (trigger.project.run([event])[0] as Document) : event;
  }

  function deliver(trigger: DatabaseTrigger, change: ChangeEvent): void {
    let event: Document | undefined;
    try {
      event = eventFor(trigger, change);
    } catch (error) {
      log.error(`trigger "${trigger.name}": its match or project expression failed on a ${change.operationType} event: ${messageOf(error)}`);
      return;
    }
    if (!event) return;
    if (trigger.unordered) {
      void track(trigger.name, trigger.functionName, [event]);
      return;
    }
    const ready = trigger.tail;
    const delivery = ready.then(() => track(trigger.name, trigger.functionName, [event]));
    trigger.tail = delivery;
    running.add(delivery);
    void delivery.then(() => running.delete(delivery));
  }

  function armSchedule(trigger: ScheduledTrigger): void {
    if (!started || disposed) return;
    const now = clock.now();
    trigger.due ??= trigger.schedule.next(new Date(now)).getTime();
    trigger.timer = arm(() => wake(trigger), Math.min(Math.max(trigger.due - now, 0), MAX_TIMER_MS));
  }

  function wake(trigger: ScheduledTrigger): void {
    trigger.timer = undefined;
    if (!started || disposed) return;
    const now = clock.now();
    if (trigger.due !== undefined && now >= trigger.due) {
      // Times missed while the process could not run (a sleeping machine) fire once, not once each.
      void track(trigger.name, trigger.functionName, []);
      trigger.due = trigger.schedule.next(new Date(now)).getTime();
    }
    armSchedule(trigger);
  }

  function stop(): void {
    started = false;
    for (const trigger of scheduled) {
      if (trigger.timer !== undefined) disarm(trigger.timer);
      trigger.timer = undefined;
      trigger.due = undefined;
    }
  }

  async function idle(): Promise<void> {
    while (running.size > 0) await Promise.all([...running]);
  }

  return {
    wants(db, coll, op) {
      return !disposed && database.some((t) => listens(t, db, coll, op));
    },

    onChange(change) {
      if (disposed) return;
      for (const trigger of database) {
        if (listens(trigger, change.ns.db, change.ns.coll, change.operationType)) deliver(trigger, change);
      }
    },

    async onAuthEvent(input) {
      if (disposed) return;
      const event: AuthTriggerEvent = { ...input, time: input.time ?? new Date(clock.now()) };
      const runs = authentication
        .filter((t) => t.operationType === event.operationType && event.providers.some((p) => t.providers.has(p)))
        .map((t) => track(t.name, t.functionName, [event]));
      await Promise.all(runs);
    },

    start() {
      if (started || disposed) return;
      started = true;
      for (const trigger of scheduled) armSchedule(trigger);
    },
    stop,
    idle,
    async dispose() {
      stop();
      disposed = true;
      await idle();
    },
  };
}
