// A small path router: patterns like `/api/client/v2.0/app/:appId/location`, one handler per method and pattern.
import type { HttpHandler } from './server';

interface Route { method: string; segments: string[]; pattern: string; handler: HttpHandler }

export type RouteMatch =
  /** `pattern` is the route as registered (`/api/client/v2.0/app/:appId/graphql`): a bounded name for metrics, never the raw path. */
  | { kind: 'found'; handler: HttpHandler; params: Record<string, string>; pattern: string }
  | { kind: 'wrong-method'; allowed: string[] }
  | { kind: 'none' };

const MATCHES_KEPT = 1000;

export class Router {
  /** Routes by their number of segments: a path is only ever compared with routes of its own length. */
  private readonly routesByLength = new Map<number, Route[]>();

  add(method: string, pattern: string, handler: HttpHandler): this {
    const segments = split(pattern);
    const upper = method.toUpperCase();
    const sameLength = this.routesByLength.get(segments.length) ?? [];
    if (sameLength.some((r) => r.method === upper && r.segments.join('/') === segments.join('/'))) {
      throw new Error(`route ${upper} ${pattern} is registered twice`);
    }
    sameLength.push({ method: upper, segments, pattern: `/${segments.join('/')}`, handler });
    this.routesByLength.set(segments.length, sameLength);
    return this;
  }

  get(pattern: string, handler: HttpHandler): this { return this.add('GET', pattern, handler); }
  post(pattern: string, handler: HttpHandler): this { return this.add('POST', pattern, handler); }
  put(pattern: string, handler: HttpHandler): this { return this.add('PUT', pattern, handler); }
  delete(pattern: string, handler: HttpHandler): this { return this.add('DELETE', pattern, handler); }

  /** Matches by method and path: clients call the same few routes over and over. */
  private readonly matched = new Map<string, RouteMatch>();

  match(method: string, path: string): RouteMatch {
    const key = `${method} ${path}`;
    let match = this.matched.get(key);
    if (!match) {
      match = this.find(method, path);
      if (match.kind === 'found') Object.freeze(match.params);
      // Paths carry ids, so the cache would grow without end: start over when it is full.
      if (this.matched.size >= MATCHES_KEPT) this.matched.clear();
      this.matched.set(key, match);
    }
    return match;
  }

  private find(method: string, path: string): RouteMatch {
    let parts: string[];
    try { parts = split(path).map(decodeURIComponent); } catch { return { kind: 'none' }; }
    const upper = method.toUpperCase();
    const allowed: string[] = [];
    for (const route of this.routesByLength.get(parts.length) ?? []) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === upper) return { kind: 'found', handler: route.handler, params, pattern: route.pattern };
      allowed.push(route.method);
    }
    return allowed.length ? { kind: 'wrong-method', allowed } : { kind: 'none' };
  }
}

/** Asks each router in turn; the first that knows the path (even for another method) answers. */
export class FirstMatchRouter extends Router {
  constructor(private readonly routers: readonly Router[]) { super(); }
  override match(method: string, path: string): RouteMatch {
    for (const router of this.routers) {
      const found = router.match(method, path);
      if (found.kind !== 'none') return found;
    }
    return { kind: 'none' };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    if (want.startsWith(':')) params[want.slice(1)] = parts[i]!;
    else if (want !== parts[i]) return undefined;
  }
  return params;
}
