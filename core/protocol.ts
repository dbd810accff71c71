// Custom messages between the extension client and the language server, declared once.
// Plain method names and parameter types: both sides wrap them in their library's message types.

/** Server → client after every (re)load: what the workspace holds. */
export const STATUS_NOTIFICATION = 'asl/status';

export interface AppSummary {
  root: string;
  name: string;
  appId?: string;
  errors: number;
  warnings: number;
}

export interface StatusParams {
  state: 'loading' | 'ready';
  apps: AppSummary[];
}
