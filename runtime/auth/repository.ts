// Users, identities, sessions, API keys and email/password accounts of one app, kept in memory and written
// through to the data dir's journal (so an acknowledged change survives kill -9).
import path from 'node:path';
import { AUTH_RECORDS_DATABASE, type DocumentStore } from '../store/types';
import { AccountEvents } from './account-events';
import { Journal, type JournalRecord, type JournalState } from './journal';

/** Where the records live: the auth journal, or collections of a DocumentStore. All records are loaded at open. */
export interface AuthRecordBackend {
  readonly state: JournalState;
  put(table: string, record: JournalRecord): Promise<void>;
  delete(table: string, id: string): Promise<void>;
  close(): Promise<void>;
}

export interface IdentityRecord {
  /** Provider-specific id: the userpass account id, the JWT `sub`, the custom function's id, … */
  id: string;
  provider_type: string;
  provider_id: string;
  /** Mapped `metadata_fields` (custom JWT). */
  data?: Record<string, unknown>;
}

export interface UserRecord {
  _id: string;
  type: 'normal' | 'server';
  disabled: boolean;
  createdAt: number;
  data: Record<string, unknown>;
  identities: IdentityRecord[];
}

export interface SessionRecord {
  _id: string;
  userId: string;
  identity: IdentityRecord;
  deviceId: string;
  createdAt: number;
  /** Seconds since the epoch, as the refresh token's `exp`. */
  expiresAt: number;
}

export interface ApiKeyRecord {
  _id: string;
  userId: string;
  name: string;
  /** SHA-256 of the key; the key itself is shown once, at creation. */
  keyHash: string;
  disabled: boolean;
  createdAt: number;
}

export interface UserpassRecord {
  /** Also the identity id of the account. */
  _id: string;
  email: string;
  passwordHash: string;
  confirmed: boolean;
  createdAt: number;
}

export interface UserpassTokenRecord {
  /** The `tokenId` sent to the user. */
  _id: string;
  kind: 'confirm' | 'reset';
  accountId: string;
  /** SHA-256 of the `token`. */
  tokenHash: string;
  expiresAt: number;
}

/**
 * A device's push registration (client-api `push/providers/<service>/registration`): the token the
 * platform would send the service's notifications to. Kept, never used to send anything.
 */
export interface PushRegistrationRecord {
  /** Derived from user, device and service: one registration per device of a user per service. */
  _id: string;
  userId: string;
  deviceId: string;
  service: string;
  registrationToken: string;
  updatedAt: number;
}

const USERS = 'users';
const SESSIONS = 'sessions';
const API_KEYS = 'api_keys';
const USERPASS = 'userpass';
const TOKENS = 'userpass_tokens';
const PUSH = 'push_registrations';
const TABLES = [USERS, SESSIONS, API_KEYS, USERPASS, TOKENS, PUSH];

export class AuthRepository {
  private readonly byIdentity = new Map<string, string>();
  private readonly byEmail = new Map<string, string>();
  private readonly byKeyHash = new Map<string, string>();
  /** Sessions revoked, users disabled or deleted, as they are stored: live sync connections end on them. */
  readonly events: AccountEvents;

  private constructor(private readonly journal: AuthRecordBackend, now?: () => number) {
    this.events = new AccountEvents(now);
    for (const u of this.all<UserRecord>(USERS)) this.indexUser(u);
    for (const a of this.all<UserpassRecord>(USERPASS)) this.byEmail.set(emailKey(a.email), a._id);
    for (const k of this.all<ApiKeyRecord>(API_KEYS)) this.byKeyHash.set(k.keyHash, k._id);
  }

  /** Opens (or creates) the auth records in a journal under `<dataDir>/auth/`. */
  static async open(dataDir: string, now?: () => number): Promise<AuthRepository> {
    return new AuthRepository(await Journal.open(path.join(dataDir, 'auth', 'records.jsonl')), now);
  }

  /**
   * Keeps the records in collections of `database` of a DocumentStore. Use a store of its own (not the
   * app's data source), so that service calls and functions can never read password hashes or sessions.
   */
  static async overStore(store: DocumentStore, database = AUTH_RECORDS_DATABASE, now?: () => number): Promise<AuthRepository> {
    return new AuthRepository(await StoreRecords.open(store, database), now);
  }

  close(): Promise<void> { return this.journal.close(); }

  user(id: string): UserRecord | undefined { return this.get<UserRecord>(USERS, id); }
  users(): UserRecord[] { return this.all<UserRecord>(USERS); }

  userByIdentity(providerId: string, identityId: string): UserRecord | undefined {
    const id = this.byIdentity.get(identityKey(providerId, identityId));
    return id === undefined ? undefined : this.user(id);
  }

  async putUser(user: UserRecord): Promise<void> {
    const old = this.user(user._id);
    if (old) for (const i of old.identities) this.byIdentity.delete(identityKey(i.provider_id, i.id));
    this.indexUser(user);
    await this.journal.put(USERS, user as unknown as JournalRecord);
    if (user.disabled && !old?.disabled) this.events.emit({ kind: 'user-disabled', userId: user._id });
  }

  /** Removes the user with everything that belongs to it: sessions, API keys, email/password account. */
  async deleteUser(userId: string): Promise<void> {
    const user = this.user(userId);
    if (!user) return;
    const work: Promise<void>[] = [];
    // Sessions go without their own events: the one event, user-deleted, says why they end.
    for (const s of this.all<SessionRecord>(SESSIONS)) if (s.userId === userId) work.push(this.journal.delete(SESSIONS, s._id));
    for (const k of this.apiKeys(userId)) work.push(this.deleteApiKey(k._id));
    for (const r of this.pushRegistrations(userId)) work.push(this.journal.delete(PUSH, r._id));
    for (const i of user.identities) {
      this.byIdentity.delete(identityKey(i.provider_id, i.id));
      if (i.provider_type === 'local-userpass') work.push(this.deleteAccount(i.id));
    }
    work.push(this.journal.delete(USERS, userId));
    await Promise.all(work);
    this.events.emit({ kind: 'user-deleted', userId });
  }

  session(id: string): SessionRecord | undefined { return this.get<SessionRecord>(SESSIONS, id); }
  putSession(s: SessionRecord): Promise<void> { return this.journal.put(SESSIONS, s as unknown as JournalRecord); }
  async deleteSession(id: string): Promise<void> {
    const session = this.session(id);
    await this.journal.delete(SESSIONS, id);
    if (session) this.events.emit({ kind: 'session-revoked', userId: session.userId, sessionId: id });
  }
  sessionsOf(userId: string): SessionRecord[] { return this.all<SessionRecord>(SESSIONS).filter((s) => s.userId === userId); }

  apiKey(id: string): ApiKeyRecord | undefined { return this.get<ApiKeyRecord>(API_KEYS, id); }
  apiKeys(userId: string): ApiKeyRecord[] {
    return this.all<ApiKeyRecord>(API_KEYS).filter((k) => k.userId === userId).sort((a, b) => a.createdAt - b.createdAt || (a._id < b._id ? -1 : 1));
  }
  apiKeyByHash(hash: string): ApiKeyRecord | undefined {
    const id = this.byKeyHash.get(hash);
    return id === undefined ? undefined : this.apiKey(id);
  }
  putApiKey(k: ApiKeyRecord): Promise<void> {
    this.byKeyHash.set(k.keyHash, k._id);
    return this.journal.put(API_KEYS, k as unknown as JournalRecord);
  }
  deleteApiKey(id: string): Promise<void> {
    const k = this.apiKey(id);
    if (k) this.byKeyHash.delete(k.keyHash);
    return this.journal.delete(API_KEYS, id);
  }

  account(id: string): UserpassRecord | undefined { return this.get<UserpassRecord>(USERPASS, id); }
  accountByEmail(email: string): UserpassRecord | undefined {
    const id = this.byEmail.get(emailKey(email));
    return id === undefined ? undefined : this.account(id);
  }
  putAccount(a: UserpassRecord): Promise<void> {
    this.byEmail.set(emailKey(a.email), a._id);
    return this.journal.put(USERPASS, a as unknown as JournalRecord);
  }
  async deleteAccount(id: string): Promise<void> {
    const a = this.account(id);
    if (a) this.byEmail.delete(emailKey(a.email));
    const work = this.all<UserpassTokenRecord>(TOKENS).filter((t) => t.accountId === id).map((t) => this.deleteToken(t._id));
    await Promise.all([...work, this.journal.delete(USERPASS, id)]);
  }

  token(id: string): UserpassTokenRecord | undefined { return this.get<UserpassTokenRecord>(TOKENS, id); }
  putToken(t: UserpassTokenRecord): Promise<void> { return this.journal.put(TOKENS, t as unknown as JournalRecord); }
  deleteToken(id: string): Promise<void> { return this.journal.delete(TOKENS, id); }

  pushRegistration(id: string): PushRegistrationRecord | undefined { return this.get<PushRegistrationRecord>(PUSH, id); }
  pushRegistrations(userId: string): PushRegistrationRecord[] {
    return this.all<PushRegistrationRecord>(PUSH).filter((r) => r.userId === userId).sort((a, b) => a.updatedAt - b.updatedAt || (a._id < b._id ? -1 : 1));
  }
  putPushRegistration(r: PushRegistrationRecord): Promise<void> { return this.journal.put(PUSH, r as unknown as JournalRecord); }
  deletePushRegistration(id: string): Promise<void> { return this.journal.delete(PUSH, id); }

  private indexUser(u: UserRecord): void {
    for (const i of u.identities) this.byIdentity.set(identityKey(i.provider_id, i.id), u._id);
  }

  private get<T>(table: string, id: string): T | undefined {
    return this.journal.state.get(table)?.get(id) as T | undefined;
  }

  private all<T>(table: string): T[] {
    return [...(this.journal.state.get(table)?.values() ?? [])] as T[];
  }
}

function identityKey(providerId: string, identityId: string): string {
  return `${providerId}\u0000${identityId}`;
}

/** Email addresses are matched without regard to case. */
function emailKey(email: string): string {
  return email.trim().toLowerCase();
}

class StoreRecords implements AuthRecordBackend {
  private constructor(private readonly store: DocumentStore, private readonly database: string, readonly state: JournalState) {}

  static async open(store: DocumentStore, database: string): Promise<StoreRecords> {
    const state: JournalState = new Map();
    for (const table of TABLES) {
      const docs = await store.collection(database, table).find({});
      state.set(table, new Map(docs.map((d) => [String(d._id), d as JournalRecord])));
    }
    return new StoreRecords(store, database, state);
  }

  async put(table: string, record: JournalRecord): Promise<void> {
    this.state.get(table)!.set(record._id, record);
    await this.store.collection(this.database, table).replaceOne({ _id: record._id }, record, { upsert: true });
  }

  async delete(table: string, id: string): Promise<void> {
    this.state.get(table)!.delete(id);
    await this.store.collection(this.database, table).deleteOne({ _id: id });
  }

  close(): Promise<void> { return this.store.close(); }
}
