// Static hosting (the platform's `hosting/files`): an app's files answer at `http://<client app id>.localhost:<port>/`,
// picked by the Host header, with the path kept as it is (as on the platform's hosting domain). Browsers
// resolve `*.localhost` to the loopback address. Client API paths (`/api/…`, `/app/…`) on that host still
// reach the API, so a hosted page can call its app on its own origin.
import fs from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';

export interface HostedSite {
  /** The client app id whose host name serves the site. */
  appId: string;
  /** Absolute path of the app's `hosting/files`. */
  filesDir: string;
}

/** Answers a request when it is for a hosted site; false when it is not (the API handles it). */
export type HostingHandler = (req: http.IncomingMessage, res: http.ServerResponse, method: string, pathname: string) => Promise<boolean>;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.map': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.ico': 'image/x-icon',
  '.webp': 'image/webp', '.txt': 'text/plain; charset=utf-8', '.woff': 'font/woff', '.woff2': 'font/woff2',
};

/** `<app id>.localhost` (any port, any case) → the app id; undefined for any other host. */
export function hostedAppIdOf(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const name = host.toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
  return name.endsWith('.localhost') && name.length > '.localhost'.length ? name.slice(0, -'.localhost'.length) : undefined;
}

/** The URL a site is served at by a runtime listening on `port`. */
export function hostingUrl(appId: string, port: number, scheme: 'http' | 'https' = 'http'): string {
  return `${scheme}://${appId.toLowerCase()}.localhost:${port}/`;
}

export function createHostingHandler(sites: () => readonly HostedSite[]): HostingHandler {
  return async (req, res, method, pathname) => {
    const hostAppId = hostedAppIdOf(req.headers.host);
    if (hostAppId === undefined || pathname.startsWith('/api/') || pathname.startsWith('/app/')) return false;
    const site = sites().find((s) => s.appId.toLowerCase() === hostAppId);
    req.resume();
    if (!site) { send(res, 404, 'text/plain; charset=utf-8', `no hosted app "${hostAppId}" on this runtime\n`); return true; }
    if (method !== 'GET' && method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      send(res, 405, 'text/plain; charset=utf-8', `method ${method} is not allowed on hosted files\n`);
      return true;
    }
    const file = await findFile(site.filesDir, pathname);
    if (!file) { send(res, 404, 'text/plain; charset=utf-8', `not found: ${pathname}\n`); return true; }
    const body = await fs.readFile(file);
    send(res, 200, CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream', method === 'HEAD' ? undefined : body, body.length);
    return true;
  };
}

/** The file a path names inside `root` (`/` and folders → their `index.html`); never a file outside `root`. */
async function findFile(root: string, pathname: string): Promise<string | undefined> {
  let rel: string;
  try { rel = decodeURIComponent(pathname); } catch { return undefined; }
  if (rel.includes('\0')) return undefined;
  const abs = path.resolve(root, '.' + path.posix.normalize('/' + rel));
  if (abs !== root && !abs.startsWith(root + path.sep)) return undefined;
  // Symbolic links are followed only while they stay inside the files folder (real paths compared).
  const realRoot = await fs.realpath(root).catch(() => undefined);
  if (realRoot === undefined) return undefined;
  for (const candidate of [abs, path.join(abs, 'index.html')]) {
    const real = await fs.realpath(candidate).catch(() => undefined);
    if (real === undefined || (real !== realRoot && !real.startsWith(realRoot + path.sep))) continue;
    const stat = await fs.stat(real).catch(() => undefined);
    if (stat?.isFile()) return real;
  }
  return undefined;
}

function send(res: http.ServerResponse, status: number, contentType: string, body: string | Buffer | undefined, length?: number): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': String(length ?? (body === undefined ? 0 : Buffer.byteLength(body))),
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-cache',
  });
  res.end(body);
}
