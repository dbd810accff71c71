// Ids of what an app names (a provider, a service, a function, a secret, a schema): the platform's ids are
// ObjectIds, and an app's files name things, so each id is derived from the app and the name, stable across restarts.
import { createHash } from 'node:crypto';
import type { HostedAppHandle } from './apps';

export function idOf(app: Pick<HostedAppHandle, 'id'>, kind: string, name: string): string {
  return createHash('sha256').update(`${kind}\u0000${app.id}\u0000${name}`).digest('hex').slice(0, 24);
}
