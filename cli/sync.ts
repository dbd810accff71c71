// `asl sync status|enable|pause|resume|terminate|simulate|sessions|migrate`: partition-based sync of an app, locally.
// Transitions edit `sync/config.json` (as a push of `state` would) after the state machine accepted them,
// and record the state in the data folder; a runtime serving the app applies the same change on reload.
import path from 'node:path';
import readline from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { loadApp } from '../core/load';
import { isClusterSource } from '../core/model';
import {
  reconcileSync, settingsForAction, syncSettingsFromFile, transitionEffect, type SyncAction, type SyncRuntimeState,
} from '../core/sync';
import { EJSON } from 'bson';
import type { RuntimeRecord } from '../core/runtime-protocol';
import { LOCAL_APP_ROUTES } from '../core/apiRoutes';
import type { SyncStatusReply } from '../core/sync/messages';
import {
  formatReport, readSyncConfigFile, readSyncState, reportToJson, writeSyncConfigFile, writeSyncState, type SimulationReport, type SyncStatusReport,
} from '../runtime/sync';
import { resolveAppRoots } from './check';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, type CliIO } from './io';
import { askRuntime, errorOf, readRuntimeRecord, RuntimeGone, startRuntimeHere } from './runningRuntime';
import { migrateSync } from './syncMigrate';
import { followSessions, listSessions } from './syncSessions';
import { listSchemaVersions } from './syncSchemaVersions';

export const SYNC_HELP = `Usage: asl sync <status|enable|pause|resume|terminate|simulate|sessions|schema-versions|migrate> [appDir] [options]

Partition-based sync of an app in the local runtime.

  status      the sync state (not-enabled, enabled, paused, terminated), what runs, and what the file asks
  enable      enable sync (needs a linked cluster, partition key and type, read and write permissions)
  pause       pause: connected clients get error 213 and new opens are refused; sets last_disabled
  resume      resume a paused sync; clients reconnect without a client reset
  terminate   erase sync metadata: every client must client-reset; asks for confirmation (--yes skips it)
  simulate    open a partition as a user: verdicts with the evaluation trace, the documents the client
              gets, the documents sync ignores, and the exact error a client would get
  sessions    the running runtime's live Realm sync sessions (user, partition, protocol, state);
              --follow prints their traffic as it arrives (messages, changeset instructions, permission
              verdicts with their traces, errors, client resets) until Ctrl-C; flexible sessions show
              their schema version (and the one they migrate to)
  schema-versions  flexible sync: the running runtime's numbered sync schema versions (a breaking
              change of the synced schema adds one), with the changes that made each
  migrate     the running runtime's partition-based → flexible sync migration: --to flexible moves
              the app to flexible sync (sync/config.json rewritten; connected clients reset into flexible
              sync with subscriptions on their partition value), --to partition rolls it back; without
              --to, its status and the rules that do not carry over

Options:
  --data DIR           the runtime's data folder (default <appDir>/.asl)
  --yes                terminate without asking
  --user ID|EMAIL      simulate: the user (id, or email of an email/password user)
  --partition VALUE    simulate: the partition value as EJSON text: '"abc"', '42', '{"$oid":"…"}', 'null'
  --follow             sessions: keep printing new traffic and sessions until Ctrl-C
  --to flexible|partition  migrate: the sync mode to move to
  --json               machine-readable output (sessions, schema-versions: one JSON object per line)
  -h, --help           show this help

Transitions edit sync/config.json; a running "asl serve" applies them when it reloads the file.
While a runtime ("asl serve" or the editor's) holds the data folder, status and simulate ask it over its
local admin routes (it leaves <data folder>/runtime.json for that): same output, its live state.`;

const ACTIONS: readonly string[] = ['enable', 'pause', 'resume', 'terminate'];

export interface SyncPrompt {
  /** Whether the user can be asked (a terminal). */
  interactive: boolean;
  confirm(question: string): Promise<boolean>;
}

const terminalPrompt: SyncPrompt = {
  interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  async confirm(question) {
    const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
    try {
      return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
    } finally {
      rl.close();
    }
  },
};

export async function runSync(argv: string[], io: CliIO, prompt: SyncPrompt = terminalPrompt): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      data: { type: 'string' }, yes: { type: 'boolean' }, user: { type: 'string' }, partition: { type: 'string' },
      json: { type: 'boolean' }, follow: { type: 'boolean' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(SYNC_HELP + '\n'); return EXIT_OK; }
  const [verb, folder, ...extra] = positionals;
  if (!verb) throw new UsageError('name a sync command: status, enable, pause, resume, terminate, simulate, sessions, schema-versions or migrate');
  if (extra.length > 0) throw new UsageError('asl sync takes at most one folder');
  if (verb !== 'status' && verb !== 'simulate' && verb !== 'sessions' && verb !== 'schema-versions' && verb !== 'migrate' && !ACTIONS.includes(verb)) throw new UsageError(`unknown sync command "${verb}"`);
  if (values.to !== undefined && verb !== 'migrate') throw new UsageError('--to goes with "asl sync migrate"');
  if (values.to !== undefined && values.to !== 'flexible' && values.to !== 'partition') throw new UsageError('--to is "flexible" or "partition"');
  const roots = await resolveAppRoots(io, folder);
  if (roots.length !== 1) {
    io.err(roots.length ? `asl sync: ${roots.length} apps found; name one of them:\n${roots.join('\n')}\n` : `asl sync: no app found${folder ? ` in ${folder}` : ''}\n`);
    return EXIT_USAGE;
  }
  const appDir = roots[0];
  const dataDir = path.resolve(io.cwd, values.data ?? path.join(appDir, '.asl'));
  if (values.follow && verb !== 'sessions') throw new UsageError('--follow goes with "asl sync sessions"');
  if (verb === 'sessions') return values.follow ? followSessions(io, dataDir, values.json ?? false) : listSessions(io, dataDir, values.json ?? false);
  if (verb === 'schema-versions') return listSchemaVersions(io, dataDir, values.json ?? false);
  if (verb === 'migrate') return migrateSync(io, dataDir, values.to, values.json ?? false);
  if (verb === 'simulate') return simulate(io, appDir, dataDir, values.user, values.partition, values.json ?? false);

  let fileValue: unknown;
  try {
    fileValue = readSyncConfigFile(appDir);
  } catch (e) {
    io.err(`asl sync: ${(e as Error).message}\n`);
    return EXIT_PROBLEMS;
  }
  const parsed = fileValue === undefined ? undefined : syncSettingsFromFile(fileValue);
  if (parsed && !parsed.ok) { io.err(`asl sync: ${path.join(appDir, 'sync/config.json')}: ${parsed.message}\n`); return EXIT_PROBLEMS; }
  const settings = parsed?.settings;
  const state = readSyncState(dataDir);
  const app = await loadApp(io.fs, appDir);
  const clusters = app.dataSources.filter(isClusterSource).map((d) => d.name);
  const now = Math.floor(Date.now() / 1000);

  if (verb === 'status') {
    const file = settings ? { type: settings.type, state: settings.state } : null;
    const running = readRuntimeRecord(dataDir);
    let report: StatusReport | undefined;
    if (running) {
      try {
        report = await statusFromRuntime(running, file);
      } catch (e) {
        if (!(e instanceof RuntimeGone)) { io.err(`asl sync status: ${(e as Error).message}\n`); return EXIT_PROBLEMS; }
      }
    }
    if (!report) {
      const pending = reconcileSync(state, settings, clusters, now);
      report = { ...statusOf(state), file, ...(pending.refused ? { refused: pending.refused.message } : {}), ...(pending.transition ? { pending: pending.transition } : {}), ...(pending.notice ? { notice: pending.notice } : {}) };
    }
    io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatStatus(report));
    return EXIT_OK;
  }

  if (!settings) { io.err(`asl sync: ${path.join(appDir, 'sync/config.json')} does not exist: there is no sync configuration to ${verb}\n`); return EXIT_PROBLEMS; }
  const action = verb as SyncAction;
  const wrong = wrongState(action, state);
  if (wrong) { io.err(`asl sync ${verb}: ${wrong}\n`); return EXIT_PROBLEMS; }
  const next = settingsForAction(settings, action, now);
  const result = reconcileSync(state, next, clusters, now);
  if (result.refused) { io.err(`asl sync ${verb}: ${result.refused.message}\n`); return EXIT_PROBLEMS; }
  if (action === 'terminate') {
    const what = `Terminating sync erases its metadata: ${transitionEffect('terminated')}.`;
    if (!values.yes) {
      if (!prompt.interactive) { io.err(`asl sync terminate: ${what}\nPass --yes to confirm.\n`); return EXIT_USAGE; }
      io.out(`${what}\n`);
      if (!(await prompt.confirm('Terminate sync?'))) { io.out('Sync was not terminated.\n'); return EXIT_PROBLEMS; }
    }
  }
  writeSyncConfigFile(appDir, next);
  writeSyncState(dataDir, result.state);
  const summary = { transition: result.transition ?? null, ...statusOf(result.state), effect: result.transition ? transitionEffect(result.transition) : null, ...(result.notice ? { notice: result.notice } : {}) };
  if (values.json) io.out(`${JSON.stringify(summary, null, 2)}\n`);
  else io.out(`sync ${result.transition ?? 'unchanged'}: ${result.transition ? transitionEffect(result.transition) : 'nothing to do'}${result.notice ? `\n${result.notice}` : ''}\n`);
  return EXIT_OK;
}

function wrongState(action: SyncAction, state: SyncRuntimeState): string | undefined {
  switch (action) {
    case 'enable': return state.status === 'enabled' ? 'sync is already enabled' : state.status === 'paused' ? 'sync is paused; use "asl sync resume"' : undefined;
    case 'pause': return state.status === 'enabled' ? undefined : `sync is ${state.status}, not enabled: there is nothing to pause`;
    case 'resume': return state.status === 'paused' ? undefined : `sync is ${state.status}, not paused: there is nothing to resume`;
    case 'terminate': return state.status === 'enabled' || state.status === 'paused' ? undefined : `sync is ${state.status}: there is nothing to terminate`;
  }
}

function statusOf(state: SyncRuntimeState) {
  const frozen = state.running?.frozen;
  return {
    status: state.status,
    epoch: state.epoch,
    ...(state.lastDisabled !== undefined ? { lastDisabled: state.lastDisabled } : {}),
    ...(frozen ? { running: { key: frozen.key, type: frozen.type, required: frozen.required, permissions: { read: frozen.read, write: frozen.write } } } : {}),
  };
}

type StatusReport = ReturnType<typeof statusOf> & {
  file: { type: string; state: string } | null;
  refused?: string;
  pending?: string;
  notice?: string;
  /** Live sync sessions (Realm protocol clients, partition feeds), when a running runtime answered. */
  liveSessions?: { realm: number; feed: number };
  /** The partition → flexible migration's phase, when a running runtime answered and the app ever migrated. */
  migration?: string;
};

/** The running runtime's state, in the shape of the report made from the data folder. */
async function statusFromRuntime(record: RuntimeRecord, file: StatusReport['file']): Promise<StatusReport> {
  const answer = await askRuntime(record, LOCAL_APP_ROUTES.syncStatus);
  if (answer.status !== 200) throw new Error(`the running runtime at ${record.url} answered: ${errorOf(answer)}`);
  const live = JSON.parse(answer.text) as Partial<SyncStatusReply> & SyncStatusReport;
  const running = live.running;
  return {
    status: live.status,
    epoch: live.epoch,
    ...(live.lastDisabled !== undefined ? { lastDisabled: live.lastDisabled } : {}),
    ...(running ? { running: { key: running.key, type: running.type, required: running.required, permissions: running.permissions } } : {}),
    file,
    ...(live.refused ? { refused: live.refused } : {}),
    ...(live.notice ? { notice: live.notice } : {}),
    liveSessions: { realm: live.liveSessions?.length ?? 0, feed: live.sessions },
    ...(live.migration?.phase ? { migration: live.migration.phase } : {}),
  };
}

function formatStatus(report: StatusReport): string {
  const lines = [`sync: ${report.status} (epoch ${report.epoch})`];
  if (report.lastDisabled !== undefined) lines.push(`last disabled: ${new Date(report.lastDisabled * 1000).toISOString()}`);
  const running = report.running;
  if (running) {
    lines.push(`partition key: "${running.key}" (${running.type}, ${running.required ? 'required' : 'optional: documents without it are in the null partition'})`);
    lines.push(`read:  ${JSON.stringify(running.permissions.read)}`);
    lines.push(`write: ${JSON.stringify(running.permissions.write)}`);
  }
  lines.push(`sync/config.json: ${report.file ? `type "${report.file.type}", state "${report.file.state}"` : 'absent'}`);
  if (report.pending) lines.push(`the runtime applies on its next load: ${report.pending}`);
  if (report.refused) lines.push(`refused: ${report.refused}`);
  if (report.notice) lines.push(report.notice);
  if (report.migration) lines.push(`partition → flexible migration: ${report.migration} (asl sync migrate shows it)`);
  if (report.liveSessions) lines.push(`live sync sessions: ${report.liveSessions.realm} Realm client(s), ${report.liveSessions.feed} partition feed(s) (asked the running runtime)`);
  return `${lines.join('\n')}\n`;
}

async function simulate(io: CliIO, appDir: string, dataDir: string, user: string | undefined, partition: string | undefined, json: boolean): Promise<number> {
  if (!user) throw new UsageError('simulate needs --user <id or email>');
  if (partition === undefined) throw new UsageError(`simulate needs --partition <EJSON value>, e.g. --partition '"abc"'`);
  const running = readRuntimeRecord(dataDir);
  if (running) {
    try {
      return await simulateOnRuntime(io, running, user, partition, json);
    } catch (e) {
      if (!(e instanceof RuntimeGone)) { io.err(`asl sync simulate: ${(e as Error).message}\n`); return EXIT_PROBLEMS; }
    }
  }
  const warnings: string[] = [];
  const runtime = await startRuntimeHere(io, 'asl sync simulate', { appDir, dataDir, log: { info: () => undefined, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) } });
  if (!runtime) return EXIT_PROBLEMS;
  try {
    const report = await runtime.sync.simulate(user, partition);
    io.out(json ? `${reportToJson(report)}\n` : formatReport(report));
    return report.error ? EXIT_PROBLEMS : EXIT_OK;
  } finally {
    await runtime.close();
  }
}

/** The same report, made by the runtime that holds the data folder. */
async function simulateOnRuntime(io: CliIO, record: RuntimeRecord, user: string, partition: string, json: boolean): Promise<number> {
  const answer = await askRuntime(record, `${LOCAL_APP_ROUTES.syncSimulate}?${new URLSearchParams({ user, partition })}`);
  if (answer.status !== 200) {
    io.err(`asl sync simulate: the running runtime at ${record.url} answered: ${errorOf(answer)}\n`);
    return EXIT_PROBLEMS;
  }
  const report = EJSON.parse(answer.text, { relaxed: false }) as SimulationReport;
  io.out(json ? `${reportToJson(report)}\n` : formatReport(report));
  return report.error ? EXIT_PROBLEMS : EXIT_OK;
}
