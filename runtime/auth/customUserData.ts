// Custom user data (config-format.md §5.2): the document of the configured collection whose
// `user_id_field` holds the user's id becomes `user_data` in access tokens and `%%user.custom_data`.
import type { CustomUserDataConfig } from '../../core/model';
import type { Document, StoreCollection } from '../store/types';
import type { AuthUser } from './service';

/**
 * The lookup for `AuthServiceOptions.findCustomUserData`, or undefined when custom user data is off.
 * `collectionFor` opens the collection of the named data source.
 */
export function customUserDataLookup(
  config: CustomUserDataConfig | undefined,
  collectionFor: (serviceName: string, database: string, collection: string) => StoreCollection,
): ((user: AuthUser) => Promise<Document | undefined>) | undefined {
  if (!config?.enabled || !config.serviceName || !config.databaseName || !config.collectionName || !config.userIdField) return undefined;
  const collection = collectionFor(config.serviceName, config.databaseName, config.collectionName);
  const field = config.userIdField;
  return async (user) => (await collection.findOne({ [field]: user.id })) ?? undefined;
}
