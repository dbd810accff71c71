// The text sent for one operation of a document: the operation and the fragments it uses (transitively),
// everything else blanked to spaces with line breaks kept. GraphQL validates a whole document, so a
// mistake in another operation, or a fragment this one does not use, must not fail this one; keeping the
// length and lines means error locations still point into the file. Fragments defined in other files come
// after it, on lines of their own.
import { Kind, visit, type FragmentDefinitionNode } from 'graphql';
import { definitionOffsetToDocument, type EmbeddedGraphqlDocument, type GraphqlDefinition, type GraphqlOperation } from '../graphql/embedded';

/** The fragments an operation spreads, directly or through others, that its document does not define. */
export function missingFragments(document: EmbeddedGraphqlDocument, operation: GraphqlOperation): string[] {
  return usedFragments(document, operation).missing;
}

/** `otherFiles`: the texts of fragments the operation uses from other files (see missingFragments). */
export function operationText(document: EmbeddedGraphqlDocument, operation: GraphqlOperation, otherFiles: string[] = []): string {
  const start = operation.start - document.start;
  const end = operation.end - document.start;
  const kept: Array<[number, number]> = [[start, end], ...usedFragments(document, operation).spans];
  const text = document.text;
  let out = '';
  let at = 0;
  for (const [from, to] of kept.sort((a, b) => a[0] - b[0])) {
    out += blank(text.slice(at, from)) + text.slice(from, to);
    at = to;
  }
  return out + blank(text.slice(at)) + otherFiles.map((fragment) => `\n${fragment}`).join('');
}

/** The spans (document offsets) of the document's fragments the operation uses, and the names it does not define. */
function usedFragments(document: EmbeddedGraphqlDocument, operation: GraphqlOperation): { spans: Array<[number, number]>; missing: string[] } {
  const start = operation.start - document.start;
  const fragments = new Map<string, GraphqlDefinition & { node: FragmentDefinitionNode }>();
  for (const definition of document.definitions) {
    if (definition.node.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.node.name.value, definition as GraphqlDefinition & { node: FragmentDefinitionNode });
  }
  const operationDefinition = document.definitions.find((d) => d.node.kind === Kind.OPERATION_DEFINITION && d.node.loc && definitionOffsetToDocument(d, d.node.loc.start) === start);
  const spans: Array<[number, number]> = [];
  const missing: string[] = [];
  const seen = new Set<string>();
  const pending = operationDefinition ? [operationDefinition.node] : [];
  while (pending.length) {
    visit(pending.pop()!, {
      FragmentSpread(spread) {
        const name = spread.name.value;
        if (seen.has(name)) return;
        seen.add(name);
        const fragment = fragments.get(name);
        if (!fragment) {
          missing.push(name);
          return;
        }
        pending.push(fragment.node);
        const loc = fragment.node.loc;
        if (loc) spans.push([definitionOffsetToDocument(fragment, loc.start), definitionOffsetToDocument(fragment, loc.end)]);
      },
    });
  }
  return { spans, missing };
}

function blank(text: string): string {
  return text.replace(/[^\r\n]/g, ' ');
}
