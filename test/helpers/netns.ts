// Two network namespaces joined by a veth pair, with addresses of the test's own: one for the runtime, one
// for a "device", so a client reaches the runtime as a phone on the network does (not over loopback).
// Needs root and a kernel that lets the container make namespaces; `netnsUnavailable()` says why not.
import { execFile, execFileSync } from 'node:child_process';

export interface VethLink {
  runtimeNs: string;
  deviceNs: string;
  /** The runtime side's address (on its veth end). */
  runtimeAddress: string;
  deviceAddress: string;
  /** `ip netns exec <ns>`, to put before a command. */
  prefix(ns: string): string[];
  /** One HTTP request made by a Node process inside `ns` (node:http, so any Host header may be sent). */
  request(ns: string, url: string, init?: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; headers: Record<string, string>; text: string }>;
  close(): void;
}

/** Why namespaces cannot be made here, or undefined when they can (tried for real: a namespace made and removed). */
export function netnsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'making network namespaces needs root (CI runs the tests as root)';
  const probe = `asl-probe-${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: ['ignore', 'ignore', 'pipe'] });
    execFileSync('ip', ['netns', 'del', probe], { stdio: ['ignore', 'ignore', 'pipe'] });
    return undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'the ip command (Debian package iproute2) is not installed';
    const stderr = (e as { stderr?: Buffer }).stderr?.toString().trim();
    return `"ip netns add" is refused here (${stderr || (e as Error).message}); the container or kernel does not allow network namespaces`;
  }
}

const REQUEST_SCRIPT = `
const http = require('node:http');
const [url, init] = [process.argv[1], JSON.parse(process.argv[2])];
const req = http.request(url, { method: init.method || 'GET', headers: init.headers || {} }, (res) => {
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (d) => { text += d; });
  res.on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, headers: res.headers, text })));
});
req.setTimeout(15000, () => req.destroy(new Error('no answer within 15 s')));
req.on('error', (e) => { process.stderr.write(String(e)); process.exit(3); });
req.end(init.body);
`;

/** Makes the namespaces and the link; `index` picks the test's own /30 in 198.18.0.0/15 (the benchmarking range). */
export function makeVethLink(index = process.pid % 250): VethLink {
  const tag = `${process.pid}`;
  const runtimeNs = `asl-rt-${tag}`;
  const deviceNs = `asl-dev-${tag}`;
  const runtimeAddress = `198.18.${index}.1`;
  const deviceAddress = `198.18.${index}.2`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const close = () => {
    for (const ns of [runtimeNs, deviceNs]) { try { ip('netns', 'del', ns); } catch { /* already gone */ } }
  };
  try {
    ip('netns', 'add', runtimeNs);
    ip('netns', 'add', deviceNs);
    ip('link', 'add', `vr${tag}`.slice(0, 15), 'netns', runtimeNs, 'type', 'veth', 'peer', 'name', `vd${tag}`.slice(0, 15), 'netns', deviceNs);
    for (const [ns, dev, address] of [[runtimeNs, `vr${tag}`, runtimeAddress], [deviceNs, `vd${tag}`, deviceAddress]] as const) {
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      ip('-n', ns, 'addr', 'add', `${address}/30`, 'dev', dev.slice(0, 15));
      ip('-n', ns, 'link', 'set', dev.slice(0, 15), 'up');
    }
  } catch (e) {
    close();
    throw e;
  }
  const prefix = (ns: string) => ['ip', 'netns', 'exec', ns];
  return {
    runtimeNs, deviceNs, runtimeAddress, deviceAddress, prefix,
    request: (ns, url, init = {}) => new Promise((resolve, reject) => {
      execFile('ip', ['netns', 'exec', ns, process.execPath, '-e', REQUEST_SCRIPT, url, JSON.stringify(init)], { timeout: 30_000 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`request to ${url} from ${ns} failed: ${stderr || error.message}`));
        else resolve(JSON.parse(stdout) as { status: number; headers: Record<string, string>; text: string });
      });
    }),
    close,
  };
}
