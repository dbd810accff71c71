// Core results → LSP shapes.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DiagnosticSeverity, type Diagnostic as LspDiagnostic } from 'vscode-languageserver';
import type { Diagnostic, Severity } from '../core/diagnostics';

export const DIAGNOSTIC_SOURCE = 'asl';

const severities: Record<Severity, DiagnosticSeverity> = {
  error: DiagnosticSeverity.Error,
  warning: DiagnosticSeverity.Warning,
  information: DiagnosticSeverity.Information,
  hint: DiagnosticSeverity.Hint,
};

export function toLspDiagnostic(d: Diagnostic): LspDiagnostic {
  return {
    range: d.range, severity: severities[d.severity], code: d.code, source: DIAGNOSTIC_SOURCE, message: d.message,
    ...(d.data ? { data: d.data } : {}),
    ...(d.related ? { relatedInformation: d.related.map((r) => ({ location: { uri: pathToUri(r.file), range: r.range }, message: r.message })) } : {}),
  };
}

export function uriToPath(uri: string): string | undefined {
  if (!uri.startsWith('file:')) return undefined;
  try { return fileURLToPath(uri); } catch { return undefined; }
}

export function pathToUri(p: string): string {
  return pathToFileURL(p).href;
}
