// Drives `../shared/realm-sync/realm-sync-probe` (realm-core 14.14's own sync client) from tests: one run is
// one process printing JSON lines; `runProbe` waits for it, `startProbe` lets a test act while it runs.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './disk';

export const REALM_SYNC_DIR = path.resolve(REPO_ROOT, '../shared/realm-sync');
export const PROBE = path.join(REALM_SYNC_DIR, 'realm-sync-probe');
export const REFERENCE_SERVER = path.join(REALM_SYNC_DIR, 'realm-sync-reference-server');
/** The probe is a Linux x86-64 binary beside the project; tests that need it say so when it is missing. */
export const probeAvailable = fs.existsSync(PROBE) && process.platform === 'linux' && process.arch === 'x64';

export type ProbeLine = Record<string, unknown> & { event: string };

export interface ProbeRun {
  lines: ProbeLine[];
  result: ProbeLine;
  exitCode: number | null;
  stderr: string;
  /** The `object` lines of the final dump: `type` → values. */
  objects(type: string): Record<string, unknown>[];
  events(event: string): ProbeLine[];
}

export interface RunningProbe {
  lines: ProbeLine[];
  /** Resolves with the first line `match` accepts (already printed or to come). */
  waitFor(match: (line: ProbeLine) => boolean, timeoutMs?: number): Promise<ProbeLine>;
  done: Promise<ProbeRun>;
  kill(): void;
}

function finish(lines: ProbeLine[], exitCode: number | null, stderr: string): ProbeRun {
  const result = [...lines].reverse().find((l) => l.event === 'result') ?? { event: 'result', status: 'no result line', exitCode };
  return {
    lines, result, exitCode, stderr,
    objects: (type) => lines.filter((l) => l.event === 'object' && l.type === type && l.step === undefined).map((l) => l.value as Record<string, unknown>),
    events: (event) => lines.filter((l) => l.event === event),
  };
}

/**
 * Starts the probe with a script (written to a temp file) and extra flags; `prefix` runs it through another
 * command (`['ip', 'netns', 'exec', NAME]`: from a network namespace, as a device on another machine).
 */
export function startProbe(script: Record<string, unknown>, flags: string[] = [], prefix: readonly string[] = []): RunningProbe {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-probe-'));
  const file = path.join(dir, 'script.json');
  fs.writeFileSync(file, JSON.stringify(script));
  const command = [...prefix, PROBE, '--script', file, ...flags];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: ProbeLine[] = [];
  const waiters = new Set<() => void>();
  let buffer = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (text.trim()) lines.push(JSON.parse(text) as ProbeLine);
    }
    for (const w of [...waiters]) w();
  });
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
  const done = new Promise<ProbeRun>((resolve) => child.on('close', (code) => {
    for (const w of [...waiters]) w();
    fs.rmSync(dir, { recursive: true, force: true });
    resolve(finish(lines, code, stderr));
  }));
  return {
    lines,
    done,
    kill: () => child.kill('SIGKILL'),
    waitFor(match, timeoutMs = 20000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          } else if (child.exitCode !== null) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`the probe ended without the line; its output:\n${lines.map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`));
          }
        };
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`no such probe line within ${timeoutMs} ms; output:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`)); }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

export function runProbe(script: Record<string, unknown>, flags: string[] = [], prefix: readonly string[] = []): Promise<ProbeRun> {
  return startProbe(script, flags, prefix).done;
}

/** Registers an email/password user over the client API and logs in once; returns the user id. */
export async function registerUser(app: string, email: string, password: string): Promise<string> {
  const register = await fetch(`${app}/auth/providers/local-userpass/register`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
  });
  if (register.status !== 201 && register.status !== 409) throw new Error(`register ${email}: ${register.status} ${await register.text()}`);
  const login = await fetch(`${app}/auth/providers/local-userpass/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email, password }),
  });
  if (!login.ok) throw new Error(`login ${email}: ${login.status} ${await login.text()}`);
  return ((await login.json()) as { user_id: string }).user_id;
}

/** Starts realm-core's reference partition-sync server; resolves with its sync URL. */
export async function startReferenceServer(): Promise<{ url: string; close(): Promise<void> }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-ref-server-'));
  const child = spawn(REFERENCE_SERVER, ['--root', root, '--port', '0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the reference server did not start')), 10000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const m = /"url":"([^"]+)"/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]!); }
    });
  });
  return {
    url,
    close: () => new Promise<void>((resolve) => {
      child.on('close', () => { fs.rmSync(root, { recursive: true, force: true }); resolve(); });
      child.kill('SIGTERM');
    }),
  };
}
