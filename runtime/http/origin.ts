// Who may talk to a runtime on localhost. A web page the developer visits can reach 127.0.0.1 too: through
// DNS rebinding (its own name resolving to 127.0.0.1, so the Host header carries that name) and through
// cross-site requests (forms and `fetch` without preflight, whose Origin is the page's). The Host check
// keeps the first out, the Origin check of unauthenticated state-changing routes the second.

/** What the runtime was bound to and announced: the names besides loopback that are its own. */
export interface OwnHosts {
  /** The `--host` given (an address or a name); a wildcard address (0.0.0.0, ::) admits any IP literal. */
  bindHost?: string;
  /** Host names of announced base URLs (a `publicUrl`). */
  names?: readonly string[];
}

const WILDCARD_ADDRESSES = new Set(['', '0.0.0.0', '::', '[::]']);
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const LOOPBACK_IPV4 = /^127(?:\.\d{1,3}){3}$/;

/** The host name of a Host header or URL authority, lower case, without port, brackets kept for IPv6. */
export function hostNameOf(authority: string): string | undefined {
  const text = authority.trim().toLowerCase();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) return undefined;
    const rest = text.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return text.slice(0, end + 1);
  }
  const m = /^([a-z0-9._-]+?)\.?(?::(\d{1,5}))?$/.exec(text);
  return m ? m[1] : undefined;
}

/** `localhost`, a subdomain of it, 127.x.x.x or [::1]. */
export function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost') || LOOPBACK_IPV4.test(name) || name === '[::1]';
}

function isIpLiteral(name: string): boolean {
  return IPV4.test(name) || (name.startsWith('[') && name.endsWith(']'));
}

/**
 * Whether a request's Host names this runtime: loopback names, the `--host` given and announced names.
 * A request without Host (HTTP/1.0) cannot come from a browser and passes. Other names are what DNS
 * rebinding looks like, and get 421.
 */
export function isOwnHost(hostHeader: string | undefined, own: OwnHosts): boolean {
  if (hostHeader === undefined) return true;
  const name = hostNameOf(hostHeader);
  if (name === undefined) return false;
  if (isLoopbackName(name)) return true;
  const bind = own.bindHost === undefined ? undefined : bracketed(own.bindHost.trim().toLowerCase());
  if (bind !== undefined && WILDCARD_ADDRESSES.has(bind)) {
    if (isIpLiteral(name)) return true;
  } else if (bind !== undefined && name === bind) {
    return true;
  }
  return (own.names ?? []).some((n) => bracketed(n.toLowerCase()) === name);
}

function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** `http(s)://<loopback name>[:port]`: a page served from this machine (the runtime's own, a dev server). */
export function isLoopbackOrigin(origin: string): boolean {
  const m = /^https?:\/\/([^/?#]+)$/i.exec(origin.replace(/\/+$/, ''));
  if (!m) return false;
  const name = hostNameOf(m[1]);
  return name !== undefined && isLoopbackName(name);
}

/**
 * The runtime's own origins: loopback names (and the bound host) on its own port, never a hosted site
 * (`<app id>.localhost`), whose pages are app code. Admin routes approve CORS for these only.
 */
export function isRuntimeOrigin(origin: string, port: number, own: OwnHosts): boolean {
  const m = /^http:\/\/([^/?#]+)$/i.exec(origin.replace(/\/+$/, ''));
  if (!m) return false;
  const authority = m[1].toLowerCase();
  const portMatch = /:(\d{1,5})$/.exec(authority);
  if (!portMatch || Number(portMatch[1]) !== port) return false;
  const name = hostNameOf(authority);
  if (name === undefined || name.endsWith('.localhost')) return false;
  if (name === 'localhost' || name === '127.0.0.1' || name === '[::1]') return true;
  const bind = own.bindHost === undefined ? undefined : bracketed(own.bindHost.trim().toLowerCase());
  return (bind !== undefined && !WILDCARD_ADDRESSES.has(bind) && name === bind) || (own.names ?? []).some((n) => bracketed(n.toLowerCase()) === name);
}

/**
 * Whether a request to an unauthenticated state-changing route (register, confirm, reset, login) may come
 * from where it says: no Origin (SDKs, curl: not a browser) unless the browser marks it cross-site, or an
 * Origin that is loopback or one of the app's `allowed_request_origins`. `Origin: null` (sandboxed frames,
 * `data:` pages) is refused.
 */
export function isTrustedRequestOrigin(origin: string | undefined, fetchSite: string | undefined, allowedOrigins: readonly string[]): boolean {
  if (origin === undefined) return fetchSite === undefined || fetchSite !== 'cross-site';
  const normalized = origin.replace(/\/+$/, '').toLowerCase();
  if (isLoopbackOrigin(normalized)) return true;
  return allowedOrigins.some((o) => o.replace(/\/+$/, '').toLowerCase() === normalized);
}
