// Small tables and formatters shared by completion, hover and code actions.
import { sdlForType, type GeneratedSchema } from '../../core/graphql';
import { scalarForBsonType } from '../../core/graphql/shape';

/** bsonType names usable with the scalar formats, with the GraphQL scalar each becomes (graphql.md §3, §10.2). */
export const BSON_SCALARS: ReadonlyArray<readonly [string, string]> = ['string', 'int', 'long', 'double', 'decimal', 'number', 'bool', 'boolean', 'objectId', 'date', 'timestamp']
  .map((t) => [t, scalarForBsonType(t) ?? ''] as const);

/** `partition.type` values (rules-and-sync.md §2, §5). */
export const PARTITION_TYPE_DOCS: Readonly<Record<string, string>> = {
  string: 'A string partition value (`"user=42"`, a user id). The schemas declare the key as `string`.',
  objectId: 'An ObjectId partition value. The schemas declare the key as `objectId`; compare user ids with `{"%stringToOid": "%%user.id"}`.',
  long: 'A 64-bit integer partition value. The schemas declare the key as `long` (or `int`).',
  uuid: 'A UUID partition value (current SDKs; not in the product description). The schemas declare the key as `uuid`.',
};

const PARTITION_TYPE_OF_BSON: Readonly<Record<string, string>> = { string: 'string', objectId: 'objectId', long: 'long', int: 'long', uuid: 'uuid', binData: 'uuid' };
const BSON_OF_PARTITION_TYPE: Readonly<Record<string, string>> = { string: 'string', objectId: 'objectId', long: 'long', uuid: 'uuid' };

export function partitionTypeForBsonType(bsonType: string): string | undefined {
  return Object.hasOwn(PARTITION_TYPE_OF_BSON, bsonType) ? PARTITION_TYPE_OF_BSON[bsonType] : undefined;
}

export function bsonTypeForPartitionType(partitionType: string): string | undefined {
  return Object.hasOwn(BSON_OF_PARTITION_TYPE, partitionType) ? BSON_OF_PARTITION_TYPE[partitionType] : undefined;
}

export function graphqlBlock(sdl: string): string {
  return '```graphql\n' + sdl + '\n```';
}

/** A type's SDL as markdown, or undefined when the schema has no such type. */
export function sdlMarkdown(generated: GeneratedSchema, typeName: string): string | undefined {
  const sdl = sdlForType(generated, typeName);
  return sdl ? graphqlBlock(sdl) : undefined;
}
