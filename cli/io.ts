// The CLI's environment, injected so commands can be tested without a process.
import type { AppFileSystem } from '../core/fs';

export interface CliIO {
  cwd: string;
  fs: AppFileSystem;
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  /** Asks a question on the terminal; absent when not on one (commands then need their flag, e.g. --yes). */
  prompt?(question: string): Promise<string>;
  /** Whether `err` writes to a terminal: progress bars are drawn only there. */
  errIsTerminal?: boolean;
}

/** Exit codes shared by every command. */
export const EXIT_OK = 0;
export const EXIT_PROBLEMS = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {}
