// Opens the authentication of one app over a data dir: records, token secret, token service, AuthService.
import { createHash } from 'node:crypto';
import type { DocumentStore } from '../store/types';
import { AuthRepository } from './repository';
import { AuthService, type AuthServiceOptions } from './service';
import { TokenService, loadOrCreateTokenSecret, systemClock, type Clock } from './tokens';

export type OpenAuthOptions = Omit<AuthServiceOptions, 'repository' | 'tokens' | 'clock' | 'domainId'> & {
  /** Holds the token secret, and the records unless `recordStore` is given. */
  dataDir: string;
  /** A DocumentStore of its own for the records (closed with the auth); default: the journal in the data dir. */
  recordStore?: DocumentStore;
  clock?: Clock;
  /** Access token lifetime (default: the platform's 30 minutes). */
  accessTokenSeconds?: number;
};

export interface OpenedAuth {
  service: AuthService;
  /** A service over the same records and token secret with other settings: the runtime makes one per app reload. */
  serviceFor(options: Omit<AuthServiceOptions, 'repository' | 'tokens' | 'clock' | 'domainId'>): AuthService;
  repository: AuthRepository;
  tokens: TokenService;
  close(): Promise<void>;
}

export async function openAuth(options: OpenAuthOptions): Promise<OpenedAuth> {
  const { dataDir, recordStore, clock = systemClock, accessTokenSeconds, ...rest } = options;
  const now = () => clock.now();
  const repository = recordStore ? await AuthRepository.overStore(recordStore, undefined, now) : await AuthRepository.open(dataDir, now);
  const domainId = createHash('sha256').update(`domain\u0000${rest.appId}`).digest('hex').slice(0, 24);
  const tokens = new TokenService(await loadOrCreateTokenSecret(dataDir), clock, domainId, accessTokenSeconds);
  const serviceFor = (o: Omit<AuthServiceOptions, 'repository' | 'tokens' | 'clock' | 'domainId'>) => new AuthService({ ...o, repository, tokens, clock, domainId });
  return { service: serviceFor(rest), serviceFor, repository, tokens, close: () => repository.close() };
}
