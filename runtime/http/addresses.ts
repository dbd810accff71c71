// Which address a request called and which client sent it. Directly, that is the Host header, the
// connection's scheme and its peer address. Behind a reverse proxy the connection is the proxy's, so the
// scheme, host and client it forwards (X-Forwarded-Proto, -Host, -For) are taken instead, but only from the
// addresses the operator named as the proxy's (`--trust-proxy`): anyone else could send those headers too.
import type http from 'node:http';
import { isIP } from 'node:net';
import { hostNameOf } from './origin';

export interface AddressOptions {
  /** Whether connections are TLS (the server's own scheme is then https). */
  tls: boolean;
  /** Peer addresses whose X-Forwarded-* headers are believed (the reverse proxy's). */
  trustedProxies?: readonly string[];
  /** The base URLs clients are told to use (`--public-url`), checked as absolute `http(s)://host[:port]`. */
  publicUrls?: readonly string[];
}

export interface CalledAddress {
  /** `http` or `https`, as the client used it. */
  scheme: 'http' | 'https';
  /** The Host the client called (forwarded by a trusted proxy, or the request's own); undefined without one. */
  authority: string | undefined;
  /** The client's IP address: the one a trusted proxy forwarded, otherwise the connection's peer. */
  clientAddress: string | undefined;
  /**
   * Whether the client is this machine: a loopback peer that forwards nobody else's request. A request
   * carrying forwarding headers from a peer not trusted as the proxy is a proxied one from somewhere else.
   */
  local: boolean;
  /** Whether scheme, host and client are what a trusted proxy forwarded. */
  viaProxy: boolean;
}

const FORWARDING_HEADERS = ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded', 'x-real-ip'];

export function calledAddress(req: http.IncomingMessage, options: AddressOptions): CalledAddress {
  const peer = req.socket.remoteAddress;
  const own: CalledAddress = { scheme: options.tls ? 'https' : 'http', authority: req.headers.host, clientAddress: peer, local: false, viaProxy: false };
  if (peer !== undefined && isTrustedProxy(peer, options.trustedProxies ?? [])) {
    const proto = lastValue(req.headers['x-forwarded-proto'])?.toLowerCase();
    const forwardedHost = lastValue(req.headers['x-forwarded-host']);
    const forwardedFor = lastValue(req.headers['x-forwarded-for']);
    const client = forwardedFor !== undefined && isIP(forwardedFor) ? forwardedFor : forwardedFor === undefined ? peer : undefined;
    return {
      scheme: proto === 'https' || proto === 'http' ? proto : own.scheme,
      authority: forwardedHost ?? own.authority,
      clientAddress: client,
      local: isLoopbackAddress(client),
      viaProxy: true,
    };
  }
  own.local = isLoopbackAddress(peer) && !FORWARDING_HEADERS.some((h) => req.headers[h] !== undefined);
  return own;
}

/**
 * The base URL a request is answered with (location, error links, pages): the public URL naming the host it
 * called (with the scheme and host a trusted proxy forwarded, when it did), the first public URL for any
 * other own name (loopback, an IP literal), and without public URLs the address it called.
 */
export function baseUrlFor(called: CalledAddress, options: AddressOptions, fallback: string): string {
  const name = called.authority === undefined ? undefined : hostNameOf(called.authority);
  const publicUrls = options.publicUrls ?? [];
  const named = name === undefined ? undefined : publicUrls.find((u) => bracketedHostName(u) === name);
  if (named !== undefined) return called.viaProxy && PLAIN_AUTHORITY.test(called.authority!) ? `${called.scheme}://${called.authority!.toLowerCase()}` : named;
  if (publicUrls.length > 0) return publicUrls[0]!;
  if (called.authority !== undefined && PLAIN_AUTHORITY.test(called.authority)) return `${called.scheme}://${called.authority.toLowerCase()}`;
  return fallback;
}

/** A host name or IP literal with an optional port, nothing else: what may be echoed into URLs. */
const PLAIN_AUTHORITY = /^(?:[a-z0-9](?:[a-z0-9.-]{0,252}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/i;

/** The host name of an absolute URL as `hostNameOf` writes it (lower case, IPv6 in brackets). */
export function bracketedHostName(url: string): string {
  return new URL(url).hostname.toLowerCase();
}

/**
 * A `--public-url` as the runtime keeps it (`scheme://host[:port]`, no trailing slash), or the reason it
 * cannot be one: only http(s), no user name or password, no path, query or fragment (clients append the
 * API's paths to it).
 */
export function checkPublicUrl(text: string): { url: string } | { problem: string } {
  let url: URL;
  try { url = new URL(text); } catch { return { problem: `--public-url must be an absolute URL such as https://sync.example.com, got "${text}"` }; }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `--public-url must be http:// or https://, got "${text}"` };
  if (url.username || url.password) return { problem: `--public-url must not carry a user name or password, got "${url.host}"` };
  if (url.pathname !== '/' || url.search || url.hash) return { problem: `--public-url must be scheme://host[:port] with no path, query or fragment, got "${text}"` };
  // A fully qualified name's final dot: Host headers are compared without it.
  if (url.hostname.endsWith('.')) url.hostname = url.hostname.slice(0, -1);
  return { url: url.origin };
}

/** Whether an address is one of the proxies'; IPv4 peers on a dual-stack socket come as `::ffff:a.b.c.d`. */
export function isTrustedProxy(peer: string, proxies: readonly string[]): boolean {
  const plain = peer.startsWith('::ffff:') && isIP(peer.slice(7)) === 4 ? peer.slice(7) : peer;
  return proxies.some((p) => p.toLowerCase() === plain.toLowerCase());
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * The last value of a header a proxy may have appended to: the one the trusted proxy itself wrote (earlier
 * ones came from the client, and anything may be written there).
 */
function lastValue(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text === undefined) return undefined;
  const parts = text.split(',').map((p) => p.trim()).filter((p) => p !== '');
  return parts.at(-1);
}
