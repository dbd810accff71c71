// A small path router: patterns like `/api/client/v2.0/app/:appId/location`, one handler per method and pattern.
import type { HttpHandler } from './server';

interface Route { method: string; segments: string[]; handler: HttpHandler }

export type RouteMatch =
  | { kind: 'found'; handler: HttpHandler; params: Record<string, string> }
  | { kind: 'wrong-method'; allowed: string[] }
  | { kind: 'none' };

export const CLIENT_API_PREFIX = '/api/client/v2.0';

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: HttpHandler): this {
    const segments = split(pattern);
    const upper = method.toUpperCase();
    if (this.routes.some((r) => r.method === upper && r.segments.join('/') === segments.join('/'))) {
      throw new Error(`route ${upper} ${pattern} is registered twice`);
    }
    this.routes.push({ method: upper, segments, handler });
    return this;
  }

  get(pattern: string, handler: HttpHandler): this { return this.add('GET', pattern, handler); }
  post(pattern: string, handler: HttpHandler): this { return this.add('POST', pattern, handler); }
  put(pattern: string, handler: HttpHandler): this { return this.add('PUT', pattern, handler); }
  delete(pattern: string, handler: HttpHandler): this { return this.add('DELETE', pattern, handler); }

  match(method: string, path: string): RouteMatch {
    const parts = split(path);
    const allowed: string[] = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === method.toUpperCase()) return { kind: 'found', handler: route.handler, params };
      allowed.push(route.method);
    }
    return allowed.length ? { kind: 'wrong-method', allowed } : { kind: 'none' };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    let got: string;
    try { got = decodeURIComponent(parts[i]!); } catch { return undefined; }
    if (want.startsWith(':')) params[want.slice(1)] = got;
    else if (want !== got) return undefined;
  }
  return params;
}
