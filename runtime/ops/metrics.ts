// The runtime's Prometheus metrics (prom-client): one registry per runtime, fed by small observers the
// rest of the runtime calls (answered requests, sync activity, function calls) and by sources read at
// scrape time (live sync connections, history and store sizes). Every label is bounded whatever clients
// send: routes are route patterns, apps the served client app ids, modes and outcomes fixed words.
import fs from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AnsweredRequest } from '../http/server';
import type { SyncActivityObserver } from '../sync/sessions/connection';
import type { StoreStats } from '../store/types';

export type SyncMode = 'partition' | 'flexible';

/** What one served app lets the metrics read at scrape time. */
export interface AppMetricsSource {
  readonly appId: string;
  syncMode(): SyncMode;
  syncCounts(): { connections: number; sessions: number };
  /** Entries in the app's sync history (every partition's, or the flexible one). */
  historyEntries(): Promise<number>;
  /** Undefined for a store that cannot tell (MongoDB). */
  storeStats(): StoreStats | undefined;
  /** Whether the app's function process runs with its agent connected. */
  functionProcessUp(): boolean;
  /** Its resident memory in bytes, where the system tells (see residentBytes); undefined otherwise. */
  functionProcessMemory(): number | undefined;
}

/**
 * A process's resident memory from `/proc/<pid>/status` (Linux); undefined elsewhere or when it is gone.
 * `read` is injected so the parsing is testable anywhere.
 */
export function residentBytes(pid: number | undefined, read: (file: string) => string = (file) => fs.readFileSync(file, 'utf8')): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(read(`/proc/${pid}/status`))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** Latency buckets in seconds: requests and sync work take milliseconds; functions may take minutes. */
const FAST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const FUNCTION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

/**
 * Node's default metrics (memory, CPU, event loop lag, heap, GC) describe the process, not a runtime: one
 * registry of them per process, whatever the number of runtimes it starts (tests start many), each
 * collector set up once.
 */
let processMetrics: Registry | undefined;

function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

export class RuntimeMetrics {
  readonly registry = new Registry();
  /** Set when the runtime starts to stop (asl_draining). */
  draining = false;
  private readonly sources = new Map<string, AppMetricsSource>();

  private readonly httpRequests = new Counter({ name: 'asl_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status', labelNames: ['method', 'route', 'status'], registers: [this.registry] });
  private readonly httpDuration = new Histogram({ name: 'asl_http_request_duration_seconds', help: 'Time from a request\'s arrival to the end of its response', labelNames: ['method', 'route'], buckets: FAST_BUCKETS, registers: [this.registry] });
  private readonly syncUploads = new Counter({ name: 'asl_sync_uploads_total', help: 'Realm sync UPLOAD messages integrated (ok) or refused', labelNames: ['app', 'mode', 'outcome'], registers: [this.registry] });
  private readonly syncUploadDuration = new Histogram({ name: 'asl_sync_upload_duration_seconds', help: 'Time to integrate one UPLOAD, its wait in the partition\'s queue included', labelNames: ['app', 'mode'], buckets: FAST_BUCKETS, registers: [this.registry] });
  private readonly syncDownloads = new Counter({ name: 'asl_sync_downloads_total', help: 'Realm sync DOWNLOAD messages sent', labelNames: ['app', 'mode'], registers: [this.registry] });
  private readonly syncDownloadBytes = new Counter({ name: 'asl_sync_download_changeset_bytes_total', help: 'Changeset bytes sent in DOWNLOAD messages', labelNames: ['app', 'mode'], registers: [this.registry] });
  private readonly syncDownloadDuration = new Histogram({ name: 'asl_sync_download_duration_seconds', help: 'Time to build one DOWNLOAD from the history', labelNames: ['app', 'mode'], buckets: FAST_BUCKETS, registers: [this.registry] });
  private readonly syncBootstrapDuration = new Histogram({ name: 'asl_sync_bootstrap_duration_seconds', help: 'Time to build and send one bootstrap, queue included (its _count is the number of bootstraps)', labelNames: ['app', 'mode'], buckets: FAST_BUCKETS, registers: [this.registry] });
  private readonly functionCalls = new Counter({ name: 'asl_function_calls_total', help: 'App function calls (clients, resolvers, triggers, endpoints, rules)', labelNames: ['app'], registers: [this.registry] });
  private readonly functionFailures = new Counter({ name: 'asl_function_failures_total', help: 'App function calls that threw, timed out or could not run', labelNames: ['app'], registers: [this.registry] });
  private readonly functionDuration = new Histogram({ name: 'asl_function_duration_seconds', help: 'Time of one app function call', labelNames: ['app'], buckets: FUNCTION_BUCKETS, registers: [this.registry] });

  private readonly processMetrics: Registry | undefined;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    // Process memory, CPU, event loop lag and heap spaces, as every Node service exposes them.
    this.processMetrics = options.defaultMetrics === false ? undefined : processRegistry();
    const sources = () => [...this.sources.values()];
    const draining = () => this.draining;
    const registers = [this.registry];
    new Gauge({
      name: 'asl_apps_served', help: 'Apps this runtime serves', registers,
      collect() { this.set(sources().length); },
    });
    new Gauge({
      name: 'asl_draining', help: '1 once the runtime is stopping (SIGTERM): new connections are refused', registers,
      collect() { this.set(draining() ? 1 : 0); },
    });
    new Gauge({
      name: 'asl_sync_connections', help: 'Live Realm sync WebSocket connections', labelNames: ['app', 'mode'], registers,
      collect() { this.reset(); for (const s of sources()) this.set({ app: s.appId, mode: s.syncMode() }, s.syncCounts().connections); },
    });
    new Gauge({
      name: 'asl_sync_sessions', help: 'Live Realm sync sessions (bound realms) over those connections', labelNames: ['app', 'mode'], registers,
      collect() { this.reset(); for (const s of sources()) this.set({ app: s.appId, mode: s.syncMode() }, s.syncCounts().sessions); },
    });
    new Gauge({
      name: 'asl_function_process_up', help: '1 while the app\'s function process runs (it starts at the first call after one ends)', labelNames: ['app'], registers,
      collect() { this.reset(); for (const s of sources()) this.set({ app: s.appId }, s.functionProcessUp() ? 1 : 0); },
    });
    new Gauge({
      name: 'asl_function_process_resident_memory_bytes', help: 'Resident memory of the app\'s function process (Linux), beside process_resident_memory_bytes of the runtime', labelNames: ['app'], registers,
      collect() {
        this.reset();
        for (const s of sources()) { const bytes = s.functionProcessMemory(); if (bytes !== undefined) this.set({ app: s.appId }, bytes); }
      },
    });
    new Gauge({
      name: 'asl_sync_history_entries', help: 'Entries kept in the app\'s sync history', labelNames: ['app'], registers,
      async collect() {
        this.reset();
        for (const s of sources()) this.set({ app: s.appId }, await s.historyEntries().catch(() => 0));
      },
    });
    new Gauge({
      name: 'asl_store_size_bytes', help: 'Bytes of the embedded store on disk: the last snapshot and the journal since', labelNames: ['app', 'part'], registers,
      collect() {
        this.reset();
        for (const s of sources()) {
          const stats = s.storeStats();
          if (!stats) continue;
          this.set({ app: s.appId, part: 'snapshot' }, stats.snapshotBytes);
          this.set({ app: s.appId, part: 'journal' }, stats.journalBytes);
        }
      },
    });
    new Gauge({
      name: 'asl_store_journal_pending_records', help: 'Journal lag: store writes queued or being written and synced, not durable yet', labelNames: ['app'], registers,
      collect() { this.reset(); for (const s of sources()) { const stats = s.storeStats(); if (stats) this.set({ app: s.appId }, stats.journalPendingRecords); } },
    });
    new Gauge({
      name: 'asl_store_journal_records', help: 'Journal records written since the store opened', labelNames: ['app'], registers,
      collect() { this.reset(); for (const s of sources()) { const stats = s.storeStats(); if (stats) this.set({ app: s.appId }, stats.journalRecords); } },
    });
  }

  /** A served app's scrape-time figures; the returned function removes them (the app was deleted or closed). */
  addApp(source: AppMetricsSource): () => void {
    this.sources.set(source.appId, source);
    return () => { if (this.sources.get(source.appId) === source) this.sources.delete(source.appId); };
  }

  readonly httpAnswered = (answer: AnsweredRequest): void => {
    this.httpRequests.inc({ method: answer.method, route: answer.route, status: String(answer.status) });
    this.httpDuration.observe({ method: answer.method, route: answer.route }, answer.seconds);
  };

  /** The observer one app's sync endpoint reports to (`mode` read at each report: a reload may change it). */
  syncObserver(appId: string, mode: () => SyncMode): SyncActivityObserver {
    return {
      upload: (seconds, outcome) => {
        this.syncUploads.inc({ app: appId, mode: mode(), outcome });
        this.syncUploadDuration.observe({ app: appId, mode: mode() }, seconds);
      },
      download: (changesets, bytes, seconds) => {
        const labels = { app: appId, mode: mode() };
        this.syncDownloads.inc(labels);
        if (bytes > 0) this.syncDownloadBytes.inc(labels, bytes);
        if (seconds !== undefined && changesets > 0) this.syncDownloadDuration.observe(labels, seconds);
      },
      bootstrap: (seconds) => this.syncBootstrapDuration.observe({ app: appId, mode: mode() }, seconds),
    };
  }

  /** Times `call` (one app function call) and counts it, and its failure when it throws. */
  async timeFunction<T>(appId: string, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    this.functionCalls.inc({ app: appId });
    try {
      return await call();
    } catch (error) {
      this.functionFailures.inc({ app: appId });
      throw error;
    } finally {
      this.functionDuration.observe({ app: appId }, (performance.now() - started) / 1000);
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text exposition format, as `/metrics` answers it. */
  async text(): Promise<string> {
    const own = await this.registry.metrics();
    if (!this.processMetrics) return own;
    return `${own.endsWith('\n') || own === '' ? own : `${own}\n`}${await this.processMetrics.metrics()}`;
  }
}
