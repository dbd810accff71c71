// What an aggregation pipeline (or a filter) may ask of the database, checked at every depth before it
// reaches a store: `$facet` sub-pipelines, `$lookup` and `$unionWith` pipelines, `$graphLookup`, and
// operators inside expressions all count. JavaScript on the server (`$where`, `$function`,
// `$accumulator`) and the server's own state (`$currentOp`, sessions) are never run; stages that read or
// write other collections (`$lookup`, `$graphLookup`, `$unionWith`, `$out`, `$merge`) only where no
// collection rules apply (system calls), since rules hold for one collection, and never into a database
// the caller names as refused (the runtime's own records).

export const SERVER_JAVASCRIPT = new Set(['$where', '$function', '$accumulator']);
export const SERVER_STATE_STAGES = new Set(['$currentOp', '$listSessions', '$listLocalSessions', '$listSearchIndexes', '$planCacheStats']);
export const CROSS_COLLECTION_STAGES = new Set(['$lookup', '$graphLookup', '$unionWith', '$out', '$merge']);

/** Deeper documents are refused rather than walked (no real pipeline comes close). */
export const MAX_PIPELINE_DEPTH = 100;

export interface PipelineViolation {
  /** The operator or stage refused, or `depth` for a document nested too deeply. */
  operator: string;
  /** Where it is, e.g. `pipeline[1].$facet.byOwner[0].$lookup`. */
  path: string;
  /** For `refused-database`: the database the stage names. */
  database?: string;
  reason: 'server-javascript' | 'server-state' | 'cross-collection' | 'refused-database' | 'depth';
}

export interface PipelineCheckOptions {
  /** Whether stages reading or writing other collections may run (false when collection rules apply). */
  allowCrossCollection: boolean;
  /** Databases no stage may read or write (`{db: …}` targets of `$lookup`, `$unionWith`, `$graphLookup`, `$out`, `$merge`). */
  refusedDatabases?: ReadonlySet<string>;
}

/** The databases a cross-collection stage names explicitly; a bare collection name stays in the pipeline's own. */
function namedDatabases(stage: string, body: unknown): unknown[] {
  if (body === null || typeof body !== 'object') return [];
  const spec = body as Record<string, unknown>;
  const dbOf = (target: unknown): unknown[] => (target !== null && typeof target === 'object' && 'db' in target ? [(target as { db: unknown }).db] : []);
  switch (stage) {
    case '$out': case '$unionWith': return dbOf(spec);
    case '$merge': return dbOf(spec.into);
    default: return dbOf(spec.from);
  }
}

/** The first operator of `value` (a pipeline, a filter, any part of one) that may not run; undefined when all may. */
export function findPipelineViolation(value: unknown, options: PipelineCheckOptions, root = 'pipeline'): PipelineViolation | undefined {
  const walk = (node: unknown, path: string, depth: number): PipelineViolation | undefined => {
    if (node === null || typeof node !== 'object') return undefined;
    if (depth > MAX_PIPELINE_DEPTH) return { operator: 'depth', path, reason: 'depth' };
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const found = walk(node[i], `${path}[${i}]`, depth + 1);
        if (found) return found;
      }
      return undefined;
    }
    // BSON values (ObjectId, Decimal128, …) hold no operators.
    if (typeof (node as { _bsontype?: unknown })._bsontype === 'string') return undefined;
    for (const [key, child] of Object.entries(node as Record<string, unknown>)) {
      const here = `${path}.${key}`;
      if (SERVER_JAVASCRIPT.has(key)) return { operator: key, path: here, reason: 'server-javascript' };
      if (SERVER_STATE_STAGES.has(key)) return { operator: key, path: here, reason: 'server-state' };
      if (CROSS_COLLECTION_STAGES.has(key)) {
        if (!options.allowCrossCollection) return { operator: key, path: here, reason: 'cross-collection' };
        const refused = namedDatabases(key, child).find((db): db is string => typeof db === 'string' && options.refusedDatabases?.has(db) === true);
        if (refused !== undefined) return { operator: key, path: here, reason: 'refused-database', database: refused };
      }
      // A literal is data: field names in it are not operators.
      if (key === '$literal') continue;
      const found = walk(child, here, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return walk(value, root, 0);
}

/** The message a caller gets for a violation. */
export function describeViolation(v: PipelineViolation): string {
  switch (v.reason) {
    case 'server-javascript': return `${v.operator} (at ${v.path}) runs JavaScript on the database server and is not allowed; compute it in a function instead`;
    case 'server-state': return `${v.operator} (at ${v.path}) reads the database server's own state and is not allowed`;
    case 'cross-collection': return `${v.operator} (at ${v.path}) reads or writes another collection, which is not allowed when collection rules apply; run the aggregation from a system function`;
    case 'refused-database': return `${v.operator} (at ${v.path}) names database '${v.database}', which holds the runtime's own records and is not reachable from app code`;
    case 'depth': return `the pipeline nests deeper than ${MAX_PIPELINE_DEPTH} levels (at ${v.path})`;
  }
}
