// The text sent for one operation of a document: the operation and the fragments it uses (transitively),
// everything else blanked to spaces with line breaks kept. GraphQL validates a whole document, so a
// mistake in another operation, or a fragment this one does not use, must not fail this one; keeping the
// length and lines means error locations still point into the file.
import { Kind, visit, type FragmentDefinitionNode } from 'graphql';
import { definitionOffsetToDocument, type EmbeddedGraphqlDocument, type GraphqlDefinition, type GraphqlOperation } from '../graphql/embedded';

export function operationText(document: EmbeddedGraphqlDocument, operation: GraphqlOperation): string {
  const start = operation.start - document.start;
  const end = operation.end - document.start;
  const kept: Array<[number, number]> = [[start, end]];
  const fragments = new Map<string, GraphqlDefinition & { node: FragmentDefinitionNode }>();
  for (const definition of document.definitions) {
    if (definition.node.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.node.name.value, definition as GraphqlDefinition & { node: FragmentDefinitionNode });
  }
  const operationDefinition = document.definitions.find((d) => d.node.kind === Kind.OPERATION_DEFINITION && d.node.loc && definitionOffsetToDocument(d, d.node.loc.start) === start);
  const used = new Set<string>();
  const pending = operationDefinition ? [operationDefinition.node] : [];
  while (pending.length) {
    visit(pending.pop()!, {
      FragmentSpread(spread) {
        const name = spread.name.value;
        const fragment = fragments.get(name);
        if (used.has(name) || !fragment) return;
        used.add(name);
        pending.push(fragment.node);
        const loc = fragment.node.loc;
        if (loc) kept.push([definitionOffsetToDocument(fragment, loc.start), definitionOffsetToDocument(fragment, loc.end)]);
      },
    });
  }
  const text = document.text;
  let out = '';
  let at = 0;
  for (const [from, to] of kept.sort((a, b) => a[0] - b[0])) {
    out += blank(text.slice(at, from)) + text.slice(from, to);
    at = to;
  }
  return out + blank(text.slice(at));
}

function blank(text: string): string {
  return text.replace(/[^\r\n]/g, ' ');
}
