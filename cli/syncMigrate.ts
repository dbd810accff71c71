// `asl sync migrate --to flexible|partition`: a step of the partition-based → flexible sync migration, over
// the runtime that holds the data folder (found through its runtime record), which rewrites sync/config.json
// and tells connected clients to migrate or revert; without --to, the migration's status.
import { LOCAL_APP_ROUTES } from '../core/apiRoutes';
import type { MigrationStatus } from '../core/sync';
import { EXIT_OK, EXIT_PROBLEMS, type CliIO } from './io';
import { askRuntime, errorOf, readRuntimeRecord, RuntimeGone } from './runningRuntime';

export function formatMigrationStatus(status: MigrationStatus): string {
  const lines = [
    status.phase === undefined ? 'migration: never started (partition-based → flexible sync)'
      : `migration: ${status.phase}${status.statusMessage ? ` (${status.statusMessage})` : ''}${status.partitionKey ? `, partition key "${status.partitionKey}"` : ''}`,
  ];
  if (status.startedAt) lines.push(`  started ${status.startedAt}${status.completedAt ? `, done ${status.completedAt}` : ''}`);
  if (status.errorMessage) lines.push(`  error: ${status.errorMessage}`);
  if (status.unmigratableRules.length > 0) {
    lines.push(`  ${status.unmigratableRules.length} rule(s) do not carry over to flexible sync (flexible sync runs on the collections' rules):`);
    for (const rule of status.unmigratableRules) lines.push(`    ${rule.file}:${rule.line}  ${rule.code}  ${rule.message}`);
  }
  return `${lines.join('\n')}\n`;
}

export async function migrateSync(io: CliIO, dataDir: string, to: string | undefined, json: boolean): Promise<number> {
  const record = readRuntimeRecord(dataDir);
  const noRuntime = (why?: string) => {
    io.err(`asl sync migrate: no runtime is running on ${dataDir}${why ? ` (${why})` : ''}; the migration runs in the runtime: start it with "asl serve" or the editor's "App Services: Start Runtime"\n`);
    return EXIT_PROBLEMS;
  };
  if (!record) return noRuntime();
  let answer;
  try {
    answer = await askRuntime(record, LOCAL_APP_ROUTES.syncMigration, to === undefined ? undefined : JSON.stringify({ to }));
  } catch (e) {
    if (e instanceof RuntimeGone) return noRuntime(e.message);
    throw e;
  }
  if (answer.status !== 200) {
    io.err(`asl sync migrate: ${errorOf(answer)}\n`);
    return EXIT_PROBLEMS;
  }
  const status = JSON.parse(answer.text) as MigrationStatus;
  io.out(json ? `${JSON.stringify(status, null, 2)}\n` : formatMigrationStatus(status));
  return EXIT_OK;
}
