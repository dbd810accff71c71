// One entry point for "what is wrong with this app": the language server and `asl check` both call it.
import { DiagnosticSink, sortDiagnostics, type Diagnostic } from './diagnostics';
import { GenerationCache, generateSchema, type GeneratedSchema } from './graphql';
import type { JsonFile } from './json';
import type { AppModel } from './model';
import { appFacts, validateExpressions } from './validate/expressions';
import { validateProviders } from './validate/providers';
import { validateReferences } from './validate/references';
import { validateResolvers } from './validate/resolvers';
import { validateStructure } from './validate/structure';
import { validateSync } from './validate/sync';

/**
 * Results that depend on one file (or on the GraphQL inputs alone) are kept between checks of the same
 * app, so that after an edit only the edited file is validated again. Parsed files keep their identity
 * while their text is unchanged (ParseCache), which is what the caches key on.
 */
export class CheckCache {
  private readonly structure = new WeakMap<JsonFile, Diagnostic[]>();
  private readonly expressions = new WeakMap<JsonFile, { factsKey: string; items: Diagnostic[] }>();
  private graphql?: { inputs: unknown[]; result: GeneratedSchema };
  private readonly generation = new GenerationCache();

  structureOf(file: JsonFile): Diagnostic[] {
    let items = this.structure.get(file);
    if (!items) {
      const sink = new DiagnosticSink();
      validateStructure([file], sink);
      this.structure.set(file, (items = sink.items));
    }
    return items;
  }

  expressionsOf(file: JsonFile, factsKey: string, analyse: (sink: DiagnosticSink) => void): Diagnostic[] {
    const hit = this.expressions.get(file);
    if (hit && hit.factsKey === factsKey) return hit.items;
    const sink = new DiagnosticSink();
    analyse(sink);
    this.expressions.set(file, { factsKey, items: sink.items });
    return sink.items;
  }

  /** The generated schema, regenerated only when a file or setting it is generated from changed. */
  generatedSchema(app: AppModel): GeneratedSchema {
    const inputs = graphqlInputs(app);
    if (this.graphql && sameItems(this.graphql.inputs, inputs)) return this.graphql.result;
    const result = generateSchema(app, this.generation);
    this.graphql = { inputs, result };
    return result;
  }
}

export function checkApp(app: AppModel, cache: CheckCache = new CheckCache()): Diagnostic[] {
  const sink = new DiagnosticSink();
  for (const d of app.loadDiagnostics) sink.add(d);
  for (const file of app.files.values()) for (const d of cache.structureOf(file)) sink.add(d);
  validateReferences(app, sink);
  const facts = appFacts(app);
  const factsKey = JSON.stringify(facts);
  validateExpressions(app, sink, (file, analyse) => { for (const d of cache.expressionsOf(file, factsKey, analyse)) sink.add(d); }, facts);
  validateSync(app, sink);
  validateProviders(app, sink);
  const generated = cache.generatedSchema(app);
  for (const d of generated.diagnostics) sink.add(d);
  validateResolvers(app, generated, sink);
  return sortDiagnostics(sink.items);
}

function graphqlInputs(app: AppModel): unknown[] {
  const inputs: unknown[] = [app.graphql.useNaturalPluralization, app.graphql.config];
  for (const ds of app.dataSources) {
    inputs.push(ds.name, ds.type);
    for (const c of ds.collections) inputs.push(c.database, c.collection, c.schema, c.relationships);
  }
  for (const r of app.graphql.customResolvers) inputs.push(r.file);
  return inputs;
}

function sameItems(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
