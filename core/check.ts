// One entry point for "what is wrong with this app": the language server and `asl check` both call it.
import { DiagnosticSink, sortDiagnostics, type Diagnostic } from './diagnostics';
import { generateSchema } from './graphql';
import type { AppModel } from './model';
import { validateExpressions } from './validate/expressions';
import { validateReferences } from './validate/references';
import { validateStructure } from './validate/structure';
import { validateSync } from './validate/sync';

export function checkApp(app: AppModel): Diagnostic[] {
  const sink = new DiagnosticSink();
  for (const d of app.loadDiagnostics) sink.add(d);
  validateStructure(app.files.values(), sink);
  validateReferences(app, sink);
  validateExpressions(app, sink);
  validateSync(app, sink);
  for (const d of generateSchema(app).diagnostics) sink.add(d);
  return sortDiagnostics(sink.items);
}
