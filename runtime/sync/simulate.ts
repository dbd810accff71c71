// "Open partition P as user U" without a client: what the sync server would answer (the verdicts with
// their traces, or the exact error), the documents the client would get per type (counts and the first
// few), and the documents of the synced collections sync ignores, with why. The CLI and the editor show it.
import { EJSON } from 'bson';
import type { EvaluationUser } from '../../core/rules';
import { partitionTypeOf, type SyncError } from '../../core/sync';
import type { Document } from '../store/types';
import type { SimulationReport as Report } from '../../core/sync/messages';
import type { SyncService } from './service';
import { showValue, traceLines } from '../../core/rules/trace';
import { ErrorCode } from './wire/errors';

export const FIRST_DOCUMENTS = 5;

/** The simulator's report over the store's documents. */
export type SimulationReport = Report<Document>;

export interface SimulatedUser { user: EvaluationUser; email?: string }

export async function simulatePartition(service: SyncService, user: SimulatedUser | undefined, userRef: string, text: string): Promise<SimulationReport> {
  const report: SimulationReport = { status: service.status(), partition: { text }, collections: [], ignored: [] };
  if (!user) {
    report.error = { code: ErrorCode.bad_authentication, name: 'ErrorBadAuthentication', message: `no user "${userRef}": give a user id or the email of an email/password user`, action: 'none', tryAgain: false };
    return report;
  }
  const result = await service.open(user.user, text, { trace: true });
  if (result.user) report.user = { id: result.user.id, ...(user.email ? { email: user.email } : {}), customData: result.user.custom_data ?? {} };
  if (result.partition !== undefined) report.partition = { text, value: result.partition, type: partitionTypeOf(result.partition) };
  if (result.verdict) report.permissions = result.verdict;
  if (!result.ok) report.error = result.error;
  if (service.partitionSettings && service.runtimeState.running) {
    for (const { collection, documents } of await service.ignoredDocuments()) {
      if (documents.length === 0) continue;
      const reasons: Record<string, number> = {};
      for (const d of documents) reasons[d.reason] = (reasons[d.reason] ?? 0) + 1;
      report.ignored.push({ type: collection.type, namespace: `${collection.database}.${collection.collection}`, count: documents.length, reasons, examples: documents.slice(0, FIRST_DOCUMENTS) });
    }
  }
  if (!result.ok) return report;
  for (const [c, docs] of await service.snapshot(result.partition)) {
    report.collections.push({ type: c.type, namespace: `${c.database}.${c.collection}`, count: docs.length, first: docs.slice(0, FIRST_DOCUMENTS) });
  }
  return report;
}

/** The report as canonical EJSON (types kept), for `--json` and the editor. */
export function reportToJson(report: SimulationReport): string {
  return EJSON.stringify(report as never, { relaxed: false }, 2);
}

/** The report for a terminal. */
export function formatReport(report: SimulationReport): string {
  const lines: string[] = [];
  const s = report.status;
  const running = s.running;
  lines.push(`sync: ${s.status}${running ? ` (key "${running.key}", ${running.type}, ${running.required ? 'required' : 'optional'})` : ''}, epoch ${s.epoch}`);
  if (report.user) lines.push(`user: ${report.user.id}${report.user.email ? ` <${report.user.email}>` : ''}  custom data: ${showValue(report.user.customData)}`);
  lines.push(`partition: ${report.partition.text}${report.partition.type ? ` (${report.partition.type})` : ''}`);
  const p = report.permissions;
  if (p) {
    lines.push('');
    lines.push(`write: ${p.write ? 'ALLOWED' : 'denied'}`);
    if (p.writeTrace) lines.push(...traceLines(p.writeTrace));
    lines.push(`read: ${p.read ? 'ALLOWED' : 'denied'}${p.readGrantedByWrite ? ' (granted by write: write implies read, whatever the read expression says)' : ''}`);
    if (p.readTrace) lines.push(...traceLines(p.readTrace));
    for (const problem of p.problems) lines.push(`  problem: ${problem}`);
  }
  lines.push('');
  if (report.error) {
    const e = report.error;
    lines.push(`client error: ${e.code} ${e.name}: ${e.message}`);
    lines.push(`  the client ${clientAction(e)}`);
  } else {
    lines.push('client error: none (the partition opens)');
  }
  if (report.collections.length) {
    lines.push('');
    lines.push('documents the client gets:');
    for (const c of report.collections) {
      lines.push(`  ${c.type} (${c.namespace}): ${c.count}`);
      for (const doc of c.first) lines.push(`    ${showValue(doc)}`);
      if (c.count > c.first.length) lines.push(`    … and ${c.count - c.first.length} more`);
    }
  }
  if (report.ignored.length) {
    lines.push('');
    lines.push('documents sync ignores (in every partition):');
    for (const c of report.ignored) {
      lines.push(`  ${c.type} (${c.namespace}): ${c.count}`);
      for (const [reason, count] of Object.entries(c.reasons)) lines.push(`    ${count} × ${reason}`);
      for (const example of c.examples) lines.push(`    e.g. _id ${showValue(example._id)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function clientAction(error: SyncError): string {
  switch (error.action) {
    case 'client-reset': return 'must client-reset (discard or recover its local file)';
    case 'retry-later': return 'retries later';
    case 'fix-client': return 'cannot open it: the partition value must have the configured type (client-side BadSyncPartitionValue, 1029)';
    case 'refresh-token': return 'refreshes its access token and reconnects';
    default: return 'cannot open this partition';
  }
}
