// `asl sync schema-versions [--json]`: the numbered versions of a flexible sync app's schema, as the runtime
// that holds the data folder keeps them (found through its runtime record): each version with the breaking
// changes that made it and its tables.
import { describeSchemaVersion, fetchSchemaVersions } from '../core/sync/sessionsClient';
import { EXIT_OK, EXIT_PROBLEMS, type CliIO } from './io';
import { askRuntime, errorOf, readRuntimeRecord, RuntimeGone } from './runningRuntime';

export async function listSchemaVersions(io: CliIO, dataDir: string, json: boolean): Promise<number> {
  const record = readRuntimeRecord(dataDir);
  const noRuntime = (why?: string) => {
    io.err(`asl sync schema-versions: no runtime is running on ${dataDir}${why ? ` (${why})` : ''}; start one with "asl serve" or the editor's "App Services: Start Runtime"\n`);
    return EXIT_PROBLEMS;
  };
  if (!record) return noRuntime();
  let answer;
  try {
    answer = await fetchSchemaVersions(async (localPath) => {
      const got = await askRuntime(record, localPath);
      if (got.status !== 200) throw new Error(`the running runtime at ${record.url} answered: ${errorOf(got)}`);
      return JSON.parse(got.text) as unknown;
    });
  } catch (e) {
    if (e instanceof RuntimeGone) return noRuntime(e.message);
    io.err(`asl sync schema-versions: ${(e as Error).message}\n`);
    return EXIT_PROBLEMS;
  }
  if (json) for (const v of answer.versions) io.out(`${JSON.stringify({ kind: 'schemaVersion', newest: v.version === answer.latest, ...v })}\n`);
  else io.out(`${answer.versions.length} sync schema version(s) (runtime at ${record.url}):\n${answer.versions.map((v) => `  ${describeSchemaVersion(v, answer.latest)}\n`).join('')}`);
  return EXIT_OK;
}
