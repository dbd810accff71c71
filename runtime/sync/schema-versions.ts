// Sync schema versions as a flexible sync client names them in its BIND (`schemaVersion`). The platform
// numbered each breaking change of an app's sync schema; the runtime keeps one version of the schema, the
// app's files as they are, so 0 is the only version: a client claiming another is refused for its session
// with the platform's error (235), and may open again at 0. (Versions past 0, and moving clients between
// them, are not built: see the sync README.)

import type { SyncError } from '../../core/sync';
import { ErrorCode } from './wire/errors';

/** The versions `GET …/sync/schemas/versions` lists, oldest first. */
export const SYNC_SCHEMA_VERSIONS: readonly number[] = [0];

/** The error for a BIND whose schema version the app does not have; undefined when it has it. */
export function schemaVersionRefusal(bindJson: Record<string, unknown> | undefined): SyncError | undefined {
  const claimed = bindJson?.schemaVersion ?? 0;
  if (typeof claimed === 'number' && SYNC_SCHEMA_VERSIONS.includes(claimed)) return undefined;
  const named = typeof claimed === 'number' ? String(claimed) : JSON.stringify(claimed).slice(0, 40);
  return {
    code: ErrorCode.bad_schema_version, name: 'ErrorBadSchemaVersion',
    message: `Client provided invalid schema version: ${named}; the app's sync schema versions are ${SYNC_SCHEMA_VERSIONS.join(', ')} (BIND)`,
    action: 'fix-client', tryAgain: false,
  };
}
