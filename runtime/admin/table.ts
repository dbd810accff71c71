// The one admin route table: every Admin API route (and the local-only routes of the editor) is declared
// here, relative to `ADMIN_API` (`/api/admin/v3.0`, core/apiRoutes.ts), and reaches its handler only with a valid admin access token, from
// a loopback address unless the runtime was told to answer others.
import { ADMIN_API } from '../../core/apiRoutes';
import { ApiError } from '../http/errors';
import { Router } from '../http/router';
import type { HttpRequest, HttpResult } from '../http/server';
import type { AdminAuth, AdminCaller } from './auth';

export type AdminHandler = (req: HttpRequest, caller: AdminCaller) => Promise<HttpResult | void> | HttpResult | void;
export type PublicHandler = (req: HttpRequest) => Promise<HttpResult | void> | HttpResult | void;

export class AdminRouteTable {
  constructor(
    readonly router: Router,
    private readonly auth: AdminAuth,
    private readonly options: { allowRemote: boolean },
  ) {}

  get(pattern: string, handler: AdminHandler): this { return this.add('GET', pattern, handler); }
  post(pattern: string, handler: AdminHandler): this { return this.add('POST', pattern, handler); }
  put(pattern: string, handler: AdminHandler): this { return this.add('PUT', pattern, handler); }
  patch(pattern: string, handler: AdminHandler): this { return this.add('PATCH', pattern, handler); }
  delete(pattern: string, handler: AdminHandler): this { return this.add('DELETE', pattern, handler); }

  /** A route behind the admin access token; `pattern` is relative to the Admin API prefix unless it starts with `/api/`. */
  add(method: string, pattern: string, handler: AdminHandler): this {
    this.router.add(method, fullPath(pattern), (req) => {
      this.checkOrigin(req);
      return handler(req, this.auth.authenticate(req.headers));
    });
    return this;
  }

  /** A route that authenticates by itself (login, refresh) or needs no admin (Atlas routes answered locally). */
  open(method: string, pattern: string, handler: PublicHandler): this {
    this.router.add(method, fullPath(pattern), (req) => {
      this.checkOrigin(req);
      return handler(req);
    });
    return this;
  }

  private checkOrigin(req: HttpRequest): void {
    // `local`: a loopback client; a request a proxy on this machine forwards for someone else is not one.
    if (this.options.allowRemote || req.local) return;
    throw new ApiError(403, 'Forbidden', 'the Admin API answers only requests from this machine (loopback); start the runtime with --admin-remote to allow others');
  }
}

function fullPath(pattern: string): string {
  return pattern.startsWith('/api/') ? pattern : `${ADMIN_API}${pattern}`;
}

/** A JSON answer with `Content-Type: application/json` exactly, as the admin clients require. */
export function json(body: unknown, status = 200): HttpResult {
  return { status, body, encoding: 'json' };
}
