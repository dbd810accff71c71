// What ends a live connection that authenticated once (a sync session): its refresh session revoked
// (logout, the admin's revoke), its user disabled or deleted, its access token expired. The user records
// emit the first three as they change, whichever route changed them; `watch` adds the expiry timer, so a
// sync protocol subscribes once per connection and is told, at most once, why it must end.

export type AccountChange =
  | { kind: 'session-revoked'; userId: string; sessionId: string }
  | { kind: 'user-disabled'; userId: string }
  | { kind: 'user-deleted'; userId: string };

/** Why a watched connection ends; `message` is for the client. */
export type AccountEnd = (AccountChange | { kind: 'token-expired'; userId: string; sessionId: string }) & { message: string };

/** One authenticated connection: the access token's user, session (`iss`) and expiry (`exp`, Unix seconds). */
export interface WatchedLogin {
  userId: string;
  sessionId: string;
  expiresAt: number;
}

interface Watcher {
  login: WatchedLogin;
  onEnd: (end: AccountEnd) => void;
  timer?: NodeJS.Timeout;
}

/** Timers longer than this are set in steps (setTimeout's limit is 2^31 - 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class AccountEvents {
  private readonly listeners = new Set<(change: AccountChange) => void>();
  private readonly watchersByUser = new Map<string, Set<Watcher>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Every change as it happens; returns the unsubscription. */
  subscribe(listener: (change: AccountChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called by the user records after the change is stored. */
  emit(change: AccountChange): void {
    for (const listener of [...this.listeners]) {
      try { listener(change); } catch { /* one subscriber's failure does not keep the others from hearing it */ }
    }
    const watchers = this.watchersByUser.get(change.userId);
    if (!watchers) return;
    for (const watcher of [...watchers]) {
      if (change.kind === 'session-revoked' && change.sessionId !== watcher.login.sessionId) continue;
      this.end(watcher, { ...change, message: messageOf(change) });
    }
  }

  /**
   * Watches one connection: `onEnd` is called once, when its session is revoked, its user disabled or
   * deleted, or its access token expires (at once if it already has). Returns the stop (call it when the
   * connection closes for another reason).
   */
  watch(login: WatchedLogin, onEnd: (end: AccountEnd) => void): () => void {
    const watcher: Watcher = { login, onEnd };
    let set = this.watchersByUser.get(login.userId);
    if (!set) this.watchersByUser.set(login.userId, (set = new Set()));
    set.add(watcher);
    this.armExpiry(watcher);
    return () => this.remove(watcher);
  }

  /** Connections being watched (for tests and status). */
  get watching(): number {
    let n = 0;
    for (const set of this.watchersByUser.values()) n += set.size;
    return n;
  }

  private armExpiry(watcher: Watcher): void {
    const left = watcher.login.expiresAt * 1000 - this.now();
    if (left <= 0) {
      this.end(watcher, { kind: 'token-expired', userId: watcher.login.userId, sessionId: watcher.login.sessionId, message: 'access token expired: refresh it and reconnect' });
      return;
    }
    watcher.timer = setTimeout(() => this.armExpiry(watcher), Math.min(left, MAX_TIMER_MS));
    watcher.timer.unref();
  }

  private end(watcher: Watcher, end: AccountEnd): void {
    if (!this.remove(watcher)) return;
    try { watcher.onEnd(end); } catch { /* the connection's own failure to close is its business */ }
  }

  private remove(watcher: Watcher): boolean {
    clearTimeout(watcher.timer);
    const set = this.watchersByUser.get(watcher.login.userId);
    if (!set?.delete(watcher)) return false;
    if (set.size === 0) this.watchersByUser.delete(watcher.login.userId);
    return true;
  }
}

function messageOf(change: AccountChange): string {
  switch (change.kind) {
    case 'session-revoked': return 'the session was revoked (logged out): log in again';
    case 'user-disabled': return 'user disabled';
    case 'user-deleted': return 'user deleted';
  }
}
