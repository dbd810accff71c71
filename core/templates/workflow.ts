// The steps of "Create App from Template…" and "Download Template Client Code…" that need no editor:
// what the quick pick shows, where the app goes, the refusal of a non-empty folder, writing the files and
// what to open afterwards. The editor command (client/templateCommands.ts) only asks and shows.
import path from 'node:path';
import type { AppFileSystem } from '../fs';
import { TEMPLATES, type TemplateInfo } from './catalogue';
import { clientFiles, createAppFiles, newClientAppId, TemplateError, validateAppName, writeFileMap, type FileWriter, type TemplateSource } from './newApp';

/** The runtime's address in created clients when none is running: `asl serve`'s default port. */
export const DEFAULT_LOCAL_BASE_URL = 'http://localhost:8080';

export interface TemplatePick {
  label: string;
  /** The client language, or that it is backend only. */
  description: string;
  detail: string;
  templateId: string;
}

const pickOf = (t: TemplateInfo): TemplatePick => ({ label: t.name, description: t.clientLanguage ?? 'backend only', detail: `${t.id} — ${t.description}`, templateId: t.id });

/** Every template, for the create quick pick. */
export function templatePicks(): TemplatePick[] {
  return TEMPLATES.map(pickOf);
}

/** The templates whose client code the UI may download (with a client, not the C++ one). */
export function downloadPicks(): TemplatePick[] {
  return TEMPLATES.filter((t) => t.client?.downloadable).map(pickOf);
}

/** Why files cannot be written into `dir` (it is a non-empty folder, or a file), or undefined when they can. */
export async function targetFolderProblem(fsys: AppFileSystem, dir: string): Promise<string | undefined> {
  const entries = await fsys.readDir(dir);
  if (entries === undefined) {
    return (await fsys.readFile(dir)) !== undefined ? `${dir} is a file; pick a folder` : undefined;
  }
  if (entries.length === 0) return undefined;
  const shown = entries.slice(0, 3).map((e) => e.name).join(', ');
  return `The folder ${dir} is not empty (it holds ${shown}${entries.length > 3 ? `, and ${entries.length - 3} more` : ''}); pick an empty or new folder`;
}

export interface CreateFromTemplateRequest {
  templateId: string;
  name: string;
  /** The folder the user picked; the app is written into `<parentDir>/<name>`. */
  parentDir: string;
  baseUrl?: string;
  random?: () => number;
}

export interface CreatedFromTemplate {
  appId: string;
  /** `<parentDir>/<name>`: holds `backend/` and, with a client, `frontend/<id>/`. */
  appDir: string;
  backendDir: string;
  /** What to show the user first: the client's README, else the backend's root config. */
  openFile: string;
  fileCount: number;
}

/** Creates the app as `apps create --template` lays it out; refuses a non-empty target folder, naming it. */
export async function createFromTemplate(source: TemplateSource, fsys: AppFileSystem, writer: FileWriter, request: CreateFromTemplateRequest): Promise<CreatedFromTemplate> {
  const invalid = validateAppName(request.name);
  if (invalid) throw new TemplateError(invalid, 'InvalidName');
  const appDir = path.join(request.parentDir, request.name);
  const problem = await targetFolderProblem(fsys, appDir);
  if (problem) throw new TemplateError(problem, 'TargetNotEmpty');
  const appId = newClientAppId(request.name, request.random);
  const { files } = await createAppFiles(source, request.templateId, { name: request.name, appId, baseUrl: request.baseUrl ?? DEFAULT_LOCAL_BASE_URL });
  await writeFileMap(writer, appDir, files);
  const readme = `frontend/${request.templateId}/README.md`;
  return {
    appId,
    appDir,
    backendDir: path.join(appDir, 'backend'),
    openFile: path.join(appDir, ...(files.has(readme) ? readme : 'backend/realm_config.json').split('/')),
    fileCount: files.size,
  };
}

export interface DownloadRequest {
  templateId: string;
  /** The folder the user picked; the client is written into `<parentDir>/<template id>`. */
  parentDir: string;
  baseUrl?: string;
}

/** Writes a template's client code in the download form (app id blank); returns its folder and README. */
export async function downloadClient(source: TemplateSource, fsys: AppFileSystem, writer: FileWriter, request: DownloadRequest): Promise<{ dir: string; readme: string }> {
  const dir = path.join(request.parentDir, request.templateId);
  const problem = await targetFolderProblem(fsys, dir);
  if (problem) throw new TemplateError(problem, 'TargetNotEmpty');
  const files = await clientFiles(source, request.templateId, { kind: 'download', baseUrl: request.baseUrl ?? DEFAULT_LOCAL_BASE_URL });
  if (!files) throw new TemplateError(`template '${request.templateId}' has no client code`, 'NoClient');
  await writeFileMap(writer, dir, files);
  return { dir, readme: path.join(dir, 'README.md') };
}
