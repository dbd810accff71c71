// One device running realm-core's own client (`realm-sync-probe`) on a persistent data folder, run after
// run: each run writes new objects (offline, or online and then waits for the upload and the download),
// and the device remembers what it wrote and what the server acknowledged (every object written before a
// run's `upload_complete` line). A run that does not finish within its limit is ended by its PID.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROBE } from '../../bench/fixtures/realm-sync-peers';
import type { ModeSpec } from './sync-fault-world';

export interface ProbeOutcome {
  exitCode: number | null;
  status: string;
  uploaded: boolean;
  /** Object ids (hex) of the final dump, when asked for. */
  objects: string[];
}

export class ProbeDevice {
  /** Object ids (hex) this device created, in order, and the prefix of them the server acknowledged. */
  readonly written: string[] = [];
  acknowledgedCount = 0;
  resets = 0;
  runs = 0;
  failedRuns = 0;
  private seq = 0;
  private running: ReturnType<typeof spawn> | undefined;

  constructor(
    readonly dataDir: string,
    private readonly spec: ModeSpec,
    private readonly account: { email: string; password: string; userId: string },
    /** Hex digits (up to 8) that make this device's ids its own. */
    private readonly idPrefix: string,
  ) {}

  get acknowledged(): string[] {
    return this.written.slice(0, this.acknowledgedCount);
  }

  private nextId(): string {
    return `${this.idPrefix}${(++this.seq).toString(16).padStart(24 - this.idPrefix.length, '0')}`;
  }

  /** One run against `baseUrl`: `writes` new objects, online (waits up to `timeoutMs`) or offline. */
  async run(options: { baseUrl: string; appId: string; writes: number; offline?: boolean; timeoutMs: number; dump?: boolean; killAfterMs?: number }): Promise<ProbeOutcome> {
    const ids = Array.from({ length: options.writes }, () => this.nextId());
    const script: Record<string, unknown> = {
      baseUrl: options.baseUrl, appId: options.appId, credentials: { type: 'emailPassword', email: this.account.email, password: this.account.password },
      schema: this.spec.schema, dataDir: this.dataDir, timeoutMs: options.timeoutMs, reuseUser: true, dump: options.dump ?? false,
      ...(this.spec.mode === 'partition' ? { partition: this.account.userId } : { flexible: true, subscriptions: [`${this.spec.collection}=owner_id == "${this.account.userId}"`] }),
      ...(options.offline ? { offline: true } : {}),
      steps: [
        ...(ids.length > 0 ? [{ write: ids.map((id, i) => ({ op: 'create', type: this.spec.collection, value: this.spec.object(id, this.account.userId, `device ${this.idPrefix} ${i}`) })) }] : []),
        ...(options.offline ? [] : [{ waitUpload: true }, { waitDownload: true }]),
      ],
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-fault-probe-'));
    const file = path.join(dir, 'script.json');
    fs.writeFileSync(file, JSON.stringify(script));
    const child = spawn(PROBE, ['--script', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.running = child;
    let out = '';
    child.stdout!.on('data', (d: Buffer) => { out += d.toString('utf8'); });
    child.stderr!.resume();
    const killer = setTimeout(() => { if (child.pid) process.kill(child.pid, 'SIGKILL'); }, options.killAfterMs ?? options.timeoutMs * 3 + 5000);
    const exitCode = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    clearTimeout(killer);
    this.running = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
    const lines = out.split('\n').filter((l) => l.trim().startsWith('{')).map((l) => { try { return JSON.parse(l) as Record<string, unknown>; } catch { return { event: 'unparsable' }; } });
    // A create that committed locally is the device's, whether or not the run got further.
    for (const line of lines) if (line.event === 'write' && line.created === true) this.written.push((line.id as { $oid: string }).$oid);
    const uploaded = lines.some((l) => l.event === 'upload_complete');
    if (uploaded) this.acknowledgedCount = this.written.length;
    const result = [...lines].reverse().find((l) => l.event === 'result');
    if (result?.clientReset === true || lines.some((l) => l.event === 'client_reset' || (l.event === 'protocol_error' && /ClientReset/.test(String(l.action))))) this.resets++;
    this.runs++;
    if (exitCode !== 0) this.failedRuns++;
    const objects = lines.filter((l) => l.event === 'object' && l.step === undefined).map((l) => ((l.value as Record<string, unknown>)._id as { $oid: string }).$oid);
    return { exitCode, status: String(result?.status ?? 'no result line'), uploaded, objects };
  }

  /** Ends a run in progress (by its PID). */
  kill(): void {
    if (this.running?.pid && this.running.exitCode === null) process.kill(this.running.pid, 'SIGKILL');
  }
}
