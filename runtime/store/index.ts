// Opens the document store a data source asks for: the embedded store by default, or a MongoDB
// deployment when a connection string is configured (the driver itself loads only then).
import { openEmbeddedStore, type EmbeddedStoreOptions } from './embedded';
import { openMongoStore } from './mongodb';
import type { DocumentStore } from './types';

export * from './types';
export { openEmbeddedStore, EmbeddedStore, type EmbeddedStoreOptions, type RecoveryReport, type Durability } from './embedded';
export { openMongoStore, MongoStore, type MongoStoreOptions } from './mongodb';

export interface StoreConfig extends EmbeddedStoreOptions {
  /** A MongoDB connection string; when set, the store is that deployment instead of the embedded one. */
  mongodbUri?: string;
}

export async function openStore(config: StoreConfig): Promise<DocumentStore> {
  if (config.mongodbUri) {
    return openMongoStore({ uri: config.mongodbUri });
  }
  return openEmbeddedStore(config);
}
