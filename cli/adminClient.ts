// The `asl` side of the Admin API: the profile (URL and admin tokens under the user's config folder,
// mode 0600; the private key is never stored) and requests that refresh an expired access token once and
// replay the request, as the platform CLI does.
import fs from 'node:fs';
import path from 'node:path';
import { isObject } from '../core/json';
import { ADMIN_API, ADMIN_ROUTES } from '../core/apiRoutes';
import type { CliIO } from './io';

export const DEFAULT_URL = 'http://localhost:8080';

export interface Profile {
  url: string;
  public_api_key?: string;
  access_token?: string;
  refresh_token?: string;
}

/** A failure to show the user as it is (exit status 1); `usage` ones exit 2. */
export class CommandError extends Error {
  constructor(message: string, readonly usage = false) { super(message); }
}

/** `$XDG_CONFIG_HOME/asl/<profile>.json`, else `~/.config/asl/<profile>.json`. */
export function profilePath(io: CliIO, profile: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(profile)) throw new CommandError(`invalid profile name "${profile}": use letters, digits, _ and -`, true);
  const home = io.env.HOME ?? io.env.USERPROFILE ?? '';
  const config = io.env.XDG_CONFIG_HOME || path.join(home, '.config');
  return path.join(config, 'asl', `${profile}.json`);
}

export function readProfile(io: CliIO, profile: string): Profile | undefined {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(profilePath(io, profile), 'utf8'));
    return isObject(value) && typeof value.url === 'string' ? (value as unknown as Profile) : undefined;
  } catch {
    return undefined;
  }
}

export function writeProfile(io: CliIO, profile: string, value: Profile): void {
  const file = profilePath(io, profile);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export interface AdminResponse { status: number; headers: Headers; body: unknown; bytes?: Uint8Array }

export class AdminClient {
  constructor(private readonly io: CliIO, private readonly profileName: string, private profile: Profile) {}

  static forCommand(io: CliIO, profileName: string, url?: string): AdminClient {
    const profile = readProfile(io, profileName);
    if (!profile?.refresh_token) throw new CommandError(`not logged in${profileName === 'default' ? '' : ` (profile ${profileName})`}: run "asl login --api-key <public key> --private-api-key <private key>" first`);
    return new AdminClient(io, profileName, url ? { ...profile, url } : profile);
  }

  get url(): string { return this.profile.url; }

  /** A JSON (or zip, with `raw`) request; non-2xx answers throw the server's `error` text. */
  async request(method: string, pathname: string, options: { body?: unknown; raw?: boolean; expect?: number[] } = {}): Promise<AdminResponse> {
    let res = await this.send(method, pathname, options);
    if (res.status === 401 && isObject(res.body) && res.body.error_code === 'InvalidSession') {
      await this.refresh();
      res = await this.send(method, pathname, options);
    }
    if (res.status < 200 || res.status > 299) {
      const message = isObject(res.body) && typeof res.body.error === 'string' ? res.body.error : `${res.status} ${typeof res.body === 'string' ? res.body : ''}`.trim();
      throw new CommandError(message);
    }
    if (options.expect && !options.expect.includes(res.status)) throw new CommandError(`unexpected status code ${res.status} from ${method} ${pathname}`);
    return res;
  }

  private async refresh(): Promise<void> {
    const res = await this.send('POST', ADMIN_ROUTES.session, { token: this.profile.refresh_token });
    if (res.status !== 201 || !isObject(res.body) || typeof res.body.access_token !== 'string') {
      writeProfile(this.io, this.profileName, { url: this.profile.url, ...(this.profile.public_api_key ? { public_api_key: this.profile.public_api_key } : {}) });
      throw new CommandError(`invalid session: log in again with "asl login --api-key <public key> --private-api-key <private key>"`);
    }
    this.profile = { ...this.profile, access_token: res.body.access_token };
    writeProfile(this.io, this.profileName, this.profile);
  }

  private async send(method: string, pathname: string, options: { body?: unknown; raw?: boolean; token?: string }): Promise<AdminResponse> {
    const headers: Record<string, string> = { 'X-BAAS-Request-Origin': 'asl' };
    const token = options.token ?? this.profile.access_token;
    if (token) headers.Authorization = `Bearer ${token}`;
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const url = pathname.startsWith('/api/') ? `${this.profile.url}${pathname}` : `${this.profile.url}${ADMIN_API}${pathname}`;
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
    } catch (e) {
      throw new CommandError(`cannot reach ${this.profile.url}: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message} (is "asl serve" running?)`);
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    const type = res.headers.get('content-type') ?? '';
    let body: unknown;
    if (type.startsWith('application/json')) {
      try { body = JSON.parse(Buffer.from(bytes).toString('utf8')); } catch { body = Buffer.from(bytes).toString('utf8'); }
    } else if (!options.raw) body = Buffer.from(bytes).toString('utf8');
    return { status: res.status, headers: res.headers, body, ...(options.raw ? { bytes } : {}) };
  }

  /** The group ids of the admin's profile, in order, without duplicates or blanks. */
  async groupIds(): Promise<string[]> {
    const res = await this.request('GET', '/auth/profile');
    const roles = isObject(res.body) && Array.isArray(res.body.roles) ? res.body.roles : [];
    return [...new Set(roles.map((r) => (isObject(r) && typeof r.group_id === 'string' ? r.group_id : '')).filter(Boolean))];
  }

  /** Every app of every group, as the platform CLI lists them (one request per product). */
  async listApps(products = ['standard', 'atlas', 'data-api', 'device-sync']): Promise<AppSummary[]> {
    const out: AppSummary[] = [];
    for (const group of await this.groupIds()) {
      for (const product of products) {
        const res = await this.request('GET', `/groups/${group}/apps${product === 'standard' ? '' : `?product=${product}`}`, { expect: [200] });
        if (Array.isArray(res.body)) for (const a of res.body) if (isObject(a) && typeof a._id === 'string' && typeof a.client_app_id === 'string') out.push(a as unknown as AppSummary);
      }
    }
    return out;
  }

  /** The app whose client app id starts with `remote` (lower-cased), as the platform CLI matches; one match or an error. */
  async findApp(remote: string): Promise<AppSummary> {
    const wanted = remote.toLowerCase();
    const matches = (await this.listApps()).filter((a) => a.client_app_id.startsWith(wanted));
    const exact = matches.find((a) => a.client_app_id === wanted);
    if (exact) return exact;
    if (matches.length === 0) throw new CommandError(`failed to find app '${remote}'`);
    if (matches.length > 1) throw new CommandError(`'${remote}' matches several apps (${matches.map((a) => a.client_app_id).join(', ')}); give more of the client app id`);
    return matches[0]!;
  }
}

export interface AppSummary { _id: string; client_app_id: string; name: string; group_id: string; template_id?: string; location?: string; deployment_model?: string; environment?: string; product?: string }
