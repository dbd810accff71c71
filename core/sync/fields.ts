// `GET …/sync/data` (rules-and-sync §10): the fields that could be the partition key, i.e. top-level
// fields present with the same partition-compatible type in every collection schema of the cluster.
import { isPlainObject } from '../rules/bsonValues';
import type { PartitionKeyType } from './config';

export interface PartitionField { key: string; type: PartitionKeyType }

const KEY_TYPE_OF_BSON_TYPE: Record<string, PartitionKeyType> = { string: 'string', objectId: 'objectId', long: 'long', int: 'long', uuid: 'uuid', binData: 'uuid' };

/** From the collection schemas (`schema.json` values) of the synced cluster; none when there are no schemas. */
export function partitionFields(schemas: readonly unknown[]): PartitionField[] {
  const typed = schemas.filter((s) => isPlainObject(s) && isPlainObject(s.properties)) as { properties: Record<string, unknown> }[];
  if (typed.length === 0) return [];
  const fieldsOf = (schema: { properties: Record<string, unknown> }): Map<string, PartitionKeyType> => {
    const out = new Map<string, PartitionKeyType>();
    for (const [key, property] of Object.entries(schema.properties)) {
      if (key === '_id' || !isPlainObject(property)) continue;
      const types = ([] as unknown[]).concat(property.bsonType).filter((t): t is string => typeof t === 'string' && t !== 'null');
      const keyTypes = new Set(types.map((t) => (Object.hasOwn(KEY_TYPE_OF_BSON_TYPE, t) ? KEY_TYPE_OF_BSON_TYPE[t] : undefined)));
      const [only] = keyTypes;
      if (keyTypes.size === 1 && only) out.set(key, only);
    }
    return out;
  };
  const [first, ...rest] = typed.map(fieldsOf);
  return [...first]
    .filter(([key, type]) => rest.every((fields) => fields.get(key) === type))
    .map(([key, type]) => ({ key, type }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
