// A sample operation for a field of the generated schema (the explorer inserts one for a custom resolver):
// its arguments as variables and its leaf fields one level down.
import { getNamedType, isLeafType, isObjectType, type GraphQLField, type GraphQLSchema } from 'graphql';

export function sampleOperation(schema: GraphQLSchema, onType: string, fieldName: string): string | undefined {
  const root = onType === 'Mutation' ? schema.getMutationType() : onType === 'Query' ? schema.getQueryType() : schema.getType(onType);
  if (!root || !isObjectType(root)) return undefined;
  const field = root.getFields()[fieldName] as GraphQLField<unknown, unknown> | undefined;
  if (!field) return undefined;
  const kind = onType === 'Mutation' ? 'mutation' : 'query';
  const name = fieldName.charAt(0).toUpperCase() + fieldName.slice(1);
  const declarations = field.args.map((a) => `$${a.name}: ${a.type.toString()}`);
  const args = field.args.map((a) => `${a.name}: $${a.name}`);
  const selection = selectionOf(getNamedType(field.type), 0);
  const call = `${fieldName}${args.length ? `(${args.join(', ')})` : ''}${selection ? ` ${selection}` : ''}`;
  if (onType !== 'Query' && onType !== 'Mutation') {
    return `# ${onType}.${fieldName} is a computed property of ${onType}: select it inside a query of ${onType} documents.\n`;
  }
  return `${kind} ${name}${declarations.length ? `(${declarations.join(', ')})` : ''} {\n  ${call}\n}\n`;
}

function selectionOf(type: ReturnType<typeof getNamedType>, depth: number): string {
  if (isLeafType(type) || !isObjectType(type)) return '';
  const leaves = Object.values(type.getFields()).filter((f) => isLeafType(getNamedType(f.type)) && f.args.length === 0).map((f) => f.name);
  if (leaves.length === 0) return depth > 1 ? '' : '{ __typename }';
  return `{ ${leaves.slice(0, 12).join(' ')} }`;
}
