// The sync state machine (rules-and-sync §9), pure: the runtime's persisted state and the configuration
// the app's files (or an admin PATCH) ask for give the next state, or a refusal saying why.
//
// not enabled → enabled (a cluster, key, type and both permissions) → paused (`state: "disabled"`,
// `last_disabled` set, new opens refused) → resumed (no client reset); enabled/paused → terminated
// (`state: ""`: a new epoch, every older client file must client-reset; `last_disabled` recorded) →
// re-enabled, possibly with a new key and rules. While enabled or paused, key, type, `required` and the
// permissions are frozen: a change is refused until sync is terminated.
import { enableProblem, frozenChanges, frozenPart, sameJson, type FrozenSettings, type SyncSettings } from './config';

export type SyncStatus = 'not-enabled' | 'enabled' | 'paused' | 'terminated';

export interface SyncRuntimeState {
  status: SyncStatus;
  /** Grows at each terminate: client files of an older epoch must client-reset (error 208). */
  epoch: number;
  /** Unix seconds of the last pause or terminate. */
  lastDisabled?: number;
  /** What runs (enabled or paused): the settings taken at enable, with their frozen part. */
  running?: { settings: SyncSettings; frozen: FrozenSettings };
  /** The frozen part of the epoch before the last terminate: a re-enable with other values means new local files. */
  previous?: FrozenSettings;
}

export const INITIAL_SYNC_STATE: SyncRuntimeState = { status: 'not-enabled', epoch: 1 };

export type SyncTransition = 'enabled' | 're-enabled' | 'paused' | 'resumed' | 'terminated';

export interface Reconciled {
  state: SyncRuntimeState;
  transition?: SyncTransition;
  /** The configuration asked for something the state machine refuses; the running state is kept. */
  refused?: { message: string; paths: string[][] };
  /** Something worth telling that is not a refusal (a re-enable with new local files). */
  notice?: string;
}

export function frozenMessage(paths: string[][]): string {
  const names = paths.map((p) => p.join('.')).join(', ');
  return `sync is enabled, so the partition key and the permissions cannot change (changed: ${names}); terminate sync first (asl sync terminate), then enable it again with the new values: every client will client-reset`;
}

/** The state after the configuration `settings` is loaded, pushed or patched at time `now` (Unix seconds). */
export function reconcileSync(state: SyncRuntimeState, settings: SyncSettings | undefined, clusterNames: readonly string[], now: number): Reconciled {
  const running = state.status === 'enabled' || state.status === 'paused';
  // No sync/config.json (deleted, or between the two halves of a replace-save) changes nothing: only a
  // configuration saying `state: ""` terminates.
  if (!settings) return { state, ...(running ? { notice: 'sync/config.json is absent: sync keeps running as it was; terminate it with "asl sync terminate"' } : {}) };
  const target = settings.state;
  if (target === '') {
    if (!running) return { state };
    return {
      state: { status: 'terminated', epoch: state.epoch + 1, lastDisabled: now, previous: state.running!.frozen },
      transition: 'terminated',
    };
  }
  if (running) {
    const current = state.running!;
    if (settings.type !== current.settings.type) {
      return { state, refused: { message: `sync is enabled in ${current.settings.type} mode; terminate sync first to change its mode to ${settings.type}`, paths: [['type']] } };
    }
    const changed = frozenChanges(current.frozen, settings);
    if (changed.length > 0) return { state, refused: { message: frozenMessage(changed), paths: changed } };
    const next: SyncRuntimeState = { ...state, running: { settings, frozen: current.frozen } };
    if (target === 'disabled' && state.status === 'enabled') {
      return { state: { ...next, status: 'paused', lastDisabled: settings.lastDisabled ?? now }, transition: 'paused' };
    }
    if (target === 'enabled' && state.status === 'paused') return { state: { ...next, status: 'enabled' }, transition: 'resumed' };
    return { state: next };
  }
  const problem = enableProblem(settings, clusterNames);
  if (problem) return { state, refused: { message: `sync cannot be enabled: ${problem}`, paths: [] } };
  const frozen = frozenPart(settings)!;
  const terminated = state.status === 'terminated';
  const enabled: SyncRuntimeState = {
    status: target === 'disabled' ? 'paused' : 'enabled',
    epoch: state.epoch,
    ...(target === 'disabled' ? { lastDisabled: settings.lastDisabled ?? now } : state.lastDisabled !== undefined ? { lastDisabled: state.lastDisabled } : {}),
    running: { settings, frozen },
  };
  const newFiles = terminated && state.previous !== undefined && !sameJson(state.previous, frozen);
  return {
    state: enabled,
    transition: target === 'disabled' ? 'paused' : terminated ? 're-enabled' : 'enabled',
    ...(newFiles ? { notice: 'sync was re-enabled with a new configuration: clients client-reset into new local database files' } : {}),
  };
}

/** The configuration asked for by a CLI or palette action on the current settings. */
export type SyncAction = 'enable' | 'pause' | 'resume' | 'terminate';

export function settingsForAction(settings: SyncSettings, action: SyncAction, now: number): SyncSettings {
  switch (action) {
    case 'enable': case 'resume': return { ...settings, state: 'enabled' };
    case 'pause': return { ...settings, state: 'disabled', lastDisabled: now };
    case 'terminate': return { ...settings, state: '', lastDisabled: now };
  }
}

/** What connected clients experience after a transition, in words (the CLI prints it). */
export function transitionEffect(transition: SyncTransition): string {
  switch (transition) {
    case 'enabled': return 'clients can open partitions';
    case 're-enabled': return 'clients with files from before the terminate must client-reset (error 208); new clients sync normally';
    case 'paused': return 'connected sessions end with error 213 (disabled session) and new opens are refused until sync resumes';
    case 'resumed': return 'clients reconnect normally, without a client reset';
    case 'terminated': return 'every connected session ends with error 208 (bad client file ident): clients must client-reset, and unsynced changes are recovered only where recovery mode is on';
  }
}
