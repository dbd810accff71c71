// Which data folder an `asl data` command works on, and whether a runtime holds it: the app around the
// current folder (or in --local, picked by --app among several) keeps its data in `<app>/.asl`, or --data
// names the folder (a runtime's folder of several apps: `--app` picks the one whose runtime is recorded).
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { loadApp } from '../core/load';
import type { RuntimeRecord } from '../core/runtime-protocol';
import { deriveAppId } from '../runtime';
import { processRuns } from '../runtime/processes';
import { resolveAppRoots } from './check';
import { UsageError, type CliIO } from './io';
import { freshAccessToken, localRouteUrl, readRuntimeRecord, RuntimeGone } from './runningRuntime';

export interface DataTarget {
  dataDir: string;
  /** The runtime holding the folder, when one runs. */
  record?: RuntimeRecord;
}

export async function resolveDataTarget(io: CliIO, options: { data?: string; app?: string; local?: string }): Promise<DataTarget> {
  if (options.data !== undefined) {
    const dataDir = path.resolve(io.cwd, options.data);
    const appsDir = path.join(dataDir, 'apps');
    if (!fs.existsSync(path.join(dataDir, 'data')) && fs.existsSync(appsDir)) return appUnderRuntimeFolder(appsDir, options.app);
    return withRecord(dataDir, options.app);
  }
  const roots = await resolveAppRoots(io, options.local);
  if (roots.length === 0) throw new UsageError(`no app found${options.local ? ` in ${options.local}` : ' around the current folder'}; name it with --local, or its data folder with --data`);
  if (roots.length === 1) return withRecord(path.join(roots[0]!, '.asl'), options.app);
  if (options.app === undefined) throw new UsageError(`${roots.length} apps found; pick one with --app <client app id>:\n${roots.join('\n')}`);
  for (const root of roots) {
    const app = await loadApp(io.fs, root);
    if ((app.appId ?? deriveAppId(app.name)) === options.app) return withRecord(path.join(root, '.asl'), options.app);
  }
  throw new UsageError(`no app with the id ${options.app} among:\n${roots.join('\n')}`);
}

function withRecord(dataDir: string, appId: string | undefined): DataTarget {
  const record = readRuntimeRecord(dataDir);
  if (record && appId !== undefined && record.appId !== appId) throw new UsageError(`the runtime on ${dataDir} serves the app ${record.appId}, not ${appId}`);
  return { dataDir, ...(record ? { record } : {}) };
}

/** `<data>/apps/<folder>` of the app a running runtime serves under that id. */
function appUnderRuntimeFolder(appsDir: string, appId: string | undefined): DataTarget {
  if (appId === undefined) throw new UsageError(`${path.dirname(appsDir)} holds the data of several apps; pick one with --app <client app id>, or name its folder (${appsDir}/<app>) with --data`);
  for (const name of fs.readdirSync(appsDir)) {
    const dataDir = path.join(appsDir, name);
    const record = readRuntimeRecord(dataDir);
    if (record?.appId === appId) return { dataDir, record };
  }
  throw new UsageError(`no runtime on ${path.dirname(appsDir)} serves the app ${appId}; with none running, name the app's own data folder (${appsDir}/<app>) with --data`);
}

/** When a process other than a runtime (or one not yet listening) holds the store, its pid. */
export function storeHolder(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'data', 'LOCK'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && processRuns(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A request to one of the recorded runtime's data routes; its answer unread, so it streams. */
export async function requestData(record: RuntimeRecord, localPath: string, init: { method: 'GET' | 'POST'; body?: AsyncIterable<Uint8Array> }): Promise<Response> {
  const token = await freshAccessToken(record);
  try {
    return await fetch(localRouteUrl(record, localPath), {
      method: init.method,
      headers: { Authorization: `Bearer ${token}`, 'X-BAAS-Request-Origin': 'asl', ...(init.body ? { 'Content-Type': 'application/octet-stream' } : {}) },
      ...(init.body ? { body: Readable.toWeb(Readable.from(init.body)) as ReadableStream, duplex: 'half' } : {}),
    } as RequestInit);
  } catch (e) {
    throw new RuntimeGone(`the runtime at ${record.url} does not answer: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`);
  }
}

/** The body of a streamed answer as chunks. */
export async function* bodyChunks(response: Response): AsyncGenerator<Uint8Array> {
  if (!response.body) return;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) yield chunk;
}
