// `asl login | logout | whoami | apps list | apps create | pull | push`: the platform CLI's commands with its
// names, flags and behaviour, over the Admin API of a running `asl serve` (or anything speaking it).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { unzipSync } from 'fflate';
import { isObject } from '../core/json';
import { ADMIN_API, ADMIN_ROUTES } from '../core/apiRoutes';
import { findAppRootUpwards } from '../core/load';
import { TEMPLATES } from '../core/templates';
import { filesToAppJson, isTransferredPath, type FileMap } from '../core/transfer/appJson';
import { AdminClient, CommandError, DEFAULT_URL, readProfile, writeProfile, type AppSummary } from './adminClient';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, type CliIO } from './io';

const LOCATIONS = ['US-VA', 'US-OR', 'DE-FF', 'IE', 'AU', 'IN-MB', 'SG', 'BR-SP'];
const COMMON = `  --profile NAME   profile to use (default "default"; stored in $XDG_CONFIG_HOME/asl or ~/.config/asl, mode 0600)
  --json           print the result as JSON
  -h, --help       show this help`;

export const LOGIN_HELP = `Usage: asl login --api-key <public key> --private-api-key <private key> [--url URL] [--yes]

Logs in to the Admin API of a running "asl serve" (its first start prints the key pair; "asl admin-keys
--rotate" makes a new one) and keeps the session's tokens in the profile. The private key is not stored.

Options:
  --api-key KEY          public admin API key
  --private-api-key KEY  private admin API key
  --url URL              the runtime's address (default: the profile's, else ${DEFAULT_URL})
  -y, --yes              replace a profile logged in with another key without asking
${COMMON}`;
export const LOGOUT_HELP = `Usage: asl logout [--profile NAME]

Ends the admin session and removes its tokens from the profile.

Options:
${COMMON}`;
export const WHOAMI_HELP = `Usage: asl whoami [--profile NAME] [--json]

Prints the runtime the profile is logged in to, its public key and whether the session is valid.

Options:
${COMMON}`;
export const APPS_HELP = `Usage: asl apps list [--json]
       asl apps create -n <name> [--template <id>] [--local <dir>] [options]

list     every app of the runtime: "<client app id> (<group id>)"
create   creates an app in the runtime (a folder under the folder "asl serve" runs on) and writes it locally:
         flat into <dir> without a template (the product's default data source, cluster-source); with a
         template, its backend in <dir>/backend and its client in <dir>/frontend/<template id>

Options of create:
  -n, --name NAME              ASCII letters, digits, _ and -, starting with a letter
  --template ID                a template id (below)
  --local DIR                  where to write the app (default ./<name>); must not exist or be empty
  -l, --location LOC           ${LOCATIONS.join(', ')} (default US-VA)
  -d, --deployment-model M     GLOBAL (default) or LOCAL
  -e, --environment E          development, testing, qa or production
  -x, --dry-run                print what would be created and change nothing
${COMMON}
Templates:
${TEMPLATES.map((t) => `  ${t.id.padEnd(36)} ${t.name}`).join('\n')}
`;
export const PULL_HELP = `Usage: asl pull --remote <app id> [--local <dir>] [--template <id>] [--yes] [--dry-run]

Writes the app's files from the runtime into a folder (default: the app's name). With --template (for an
app created from a template), the backend goes to <dir>/backend and the client to <dir>/frontend/<id>.

Options:
  --remote ID       client app id (or its beginning); default: the app_id of the app around the current folder
  --local DIR       destination folder
  -t, --template ID also write the template's client code (app id and local URLs filled in)
  -y, --yes         write into an existing folder without asking
  -x, --dry-run     print what would be written and change nothing
${COMMON}`;
export const PUSH_HELP = `Usage: asl push [--remote <app id>] [--local <dir>] [--yes] [--dry-run]

Shows what would change in the app served by the runtime, asks, then deploys (draft, import, deployment)
and waits for it. When no app has that id, it offers to create one (named as realm_config.json says,
whose app_id it then rewrites). The runtime checks the pushed files first: an app with errors is refused with the
checker's message (file, position, problem) and nothing changes.

Options:
  --local DIR     the app folder (default: the app around the current folder)
  --remote ID     client app id (default: app_id of the folder's realm_config.json)
  -y, --yes       deploy without asking (needed when not run on a terminal)
  -x, --dry-run   show the differences only
${COMMON}`;

const common = { profile: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

type Run = (io: CliIO) => Promise<number>;

/** Runs a command body, turning CommandErrors into a message and exit status (1, or 2 for usage). */
async function guarded(io: CliIO, name: string, body: Run): Promise<number> {
  try {
    return await body(io);
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    io.err(`asl ${name}: ${e.message}\n`);
    return e.usage ? EXIT_USAGE : EXIT_PROBLEMS;
  }
}

async function confirm(io: CliIO, question: string, yes: boolean | undefined, flag: string): Promise<boolean> {
  if (yes) return true;
  if (!io.prompt) throw new CommandError(`${question}: not running on a terminal, so pass ${flag} to go ahead`, true);
  const answer = (await io.prompt(`${question} (y/N) `)).trim().toLowerCase();
  return answer === 'y' || answer === 'yes';
}

export async function runLogin(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...common, 'api-key': { type: 'string' }, 'private-api-key': { type: 'string' }, url: { type: 'string' }, yes: { type: 'boolean', short: 'y' } }, strict: true });
  if (values.help) { io.out(LOGIN_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'login', async () => {
    const profileName = values.profile ?? 'default';
    const existing = readProfile(io, profileName);
    const url = (values.url ?? existing?.url ?? DEFAULT_URL).replace(/\/+$/, '');
    let publicKey = values['api-key'];
    let privateKey = values['private-api-key'];
    if (publicKey === undefined && io.prompt) publicKey = (await io.prompt('API Key: ')).trim();
    if (privateKey === undefined && io.prompt) privateKey = (await io.prompt('Private API Key: ')).trim();
    if (!publicKey || !privateKey) throw new CommandError('--api-key and --private-api-key are required (asl serve prints the pair on its first start)', true);
    if (existing?.refresh_token && existing.public_api_key && existing.public_api_key !== publicKey) {
      if (!(await confirm(io, 'This action will terminate the existing session of another key. Continue?', values.yes, '--yes'))) return EXIT_PROBLEMS;
    }
    const client = new AdminClient(io, profileName, { url });
    const res = await client.request('POST', '/auth/providers/mongodb-cloud/login', { body: { username: publicKey, apiKey: privateKey }, expect: [200] });
    const body = res.body as Record<string, unknown>;
    writeProfile(io, profileName, { url, public_api_key: publicKey, access_token: String(body.access_token), refresh_token: String(body.refresh_token) });
    io.out(values.json ? JSON.stringify({ url, public_api_key: publicKey, user_id: body.user_id }) + '\n' : 'Successfully logged in\n');
    return EXIT_OK;
  });
}

export async function runLogout(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({ args: argv, options: common, strict: true });
  if (values.help) { io.out(LOGOUT_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'logout', async () => {
    const profileName = values.profile ?? 'default';
    const existing = readProfile(io, profileName);
    if (existing?.refresh_token) {
      try {
        await fetch(`${existing.url}${ADMIN_API}${ADMIN_ROUTES.session}`, { method: 'DELETE', headers: { Authorization: `Bearer ${existing.refresh_token}` } });
      } catch { /* the runtime is gone; the tokens are dropped anyway */ }
      writeProfile(io, profileName, { url: existing.url, ...(existing.public_api_key ? { public_api_key: existing.public_api_key } : {}) });
    }
    io.out(values.json ? JSON.stringify({ logged_out: true }) + '\n' : 'Successfully logged out\n');
    return EXIT_OK;
  });
}

export async function runWhoami(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({ args: argv, options: common, strict: true });
  if (values.help) { io.out(WHOAMI_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'whoami', async () => {
    const profileName = values.profile ?? 'default';
    const profile = readProfile(io, profileName);
    if (!profile?.refresh_token) {
      if (values.json) io.out(JSON.stringify({ logged_in: false }) + '\n');
      else io.out('No user is currently logged in\n');
      return EXIT_PROBLEMS;
    }
    const groups = await AdminClient.forCommand(io, profileName).groupIds();
    if (values.json) io.out(JSON.stringify({ logged_in: true, url: profile.url, public_api_key: profile.public_api_key, group_ids: groups }) + '\n');
    else io.out(`Currently logged in to ${profile.url} with the API key ${profile.public_api_key ?? '(unknown)'} (project ${groups.join(', ')})\n`);
    return EXIT_OK;
  });
}

export async function runApps(argv: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') { io.out(APPS_HELP + '\n'); return sub === undefined ? EXIT_USAGE : EXIT_OK; }
  if (sub === 'list' || sub === 'ls') return appsList(rest, io);
  if (sub === 'create') return appsCreate(rest, io);
  io.err(`asl apps: unknown subcommand "${sub}"\n\n${APPS_HELP}\n`);
  return EXIT_USAGE;
}

async function appsList(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...common, app: { type: 'string', short: 'a' }, product: { type: 'string', multiple: true } }, strict: true });
  if (values.help) { io.out(APPS_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'apps list', async () => {
    const client = AdminClient.forCommand(io, values.profile ?? 'default');
    const apps = (await client.listApps(values.product)).filter((a) => !values.app || a.client_app_id.startsWith(values.app.toLowerCase()));
    if (values.json) io.out(JSON.stringify(apps.map((a) => ({ client_app_id: a.client_app_id, _id: a._id, name: a.name, group_id: a.group_id, product: a.product }))) + '\n');
    else if (apps.length === 0) io.out('No available apps to show\n');
    else io.out(`Found ${apps.length} apps\n${apps.map((a) => `  ${a.client_app_id} (${a.group_id})`).join('\n')}\n`);
    return EXIT_OK;
  });
}

async function appsCreate(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...common, name: { type: 'string', short: 'n' }, template: { type: 'string' }, local: { type: 'string' }, location: { type: 'string', short: 'l' },
      'deployment-model': { type: 'string', short: 'd' }, environment: { type: 'string', short: 'e' }, 'dry-run': { type: 'boolean', short: 'x' },
    },
    strict: true,
  });
  if (values.help) { io.out(APPS_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'apps create', async () => {
    const name = values.name;
    if (!name) throw new CommandError('-n/--name is required', true);
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(name)) throw new CommandError(`app name "${name}" must start with a letter and hold only ASCII letters, digits, _ and -`, true);
    const location = (values.location ?? 'US-VA').toUpperCase();
    if (!LOCATIONS.includes(location)) throw new CommandError(`unsupported value for location: "${values.location}" (use one of ${LOCATIONS.join(', ')})`, true);
    const deploymentModel = (values['deployment-model'] ?? 'GLOBAL').toUpperCase();
    if (deploymentModel !== 'GLOBAL' && deploymentModel !== 'LOCAL') throw new CommandError(`unsupported value for deployment model: "${values['deployment-model']}" (GLOBAL or LOCAL)`, true);
    const environment = values.environment?.toLowerCase();
    if (environment !== undefined && !['development', 'testing', 'qa', 'production'].includes(environment)) throw new CommandError(`unsupported value for environment: "${values.environment}"`, true);
    const target = path.resolve(io.cwd, values.local ?? name);
    if (fs.existsSync(target) && fs.readdirSync(target).length > 0) throw new CommandError(`${target} already exists and is not empty; choose another with --local`, true);
    if (!values.local && (await findAppRootUpwards(io.fs, io.cwd))) throw new CommandError('a project already exists here (the current folder is inside an app); run from outside it or give --local', true);

    const client = AdminClient.forCommand(io, values.profile ?? 'default');
    const templateId = values.template;
    if (templateId !== undefined) {
      const templates = (await client.request('GET', '/templates', { expect: [200] })).body;
      if (!Array.isArray(templates) || !templates.some((t) => isObject(t) && t.id === templateId)) throw new CommandError(`template '${templateId}' not found`, true);
    }
    const [groupId] = await client.groupIds();
    if (!groupId) throw new CommandError('failed to find group');
    let clusterName: string | undefined;
    if (templateId !== undefined) {
      const clusters = (await client.request('GET', `/api/atlas/v1.0/groups/${groupId}/clusters`, { expect: [200] })).body;
      const results = isObject(clusters) && Array.isArray(clusters.results) ? clusters.results : [];
      clusterName = results.map((c) => (isObject(c) && typeof c.name === 'string' ? c.name : '')).find(Boolean) ?? 'Cluster0';
    }
    if (values['dry-run']) {
      io.out(values.json
        ? JSON.stringify({ dry_run: true, name, filepath: target, template_id: templateId, clusters: clusterName ? [{ name: clusterName }] : [] }) + '\n'
        : `A minimal app would be created at ${target}${templateId ? ` from template ${templateId}, linked to cluster ${clusterName}` : ''}\nTo create this app run: asl apps create -n ${name}${templateId ? ` --template ${templateId}` : ''}${values.local ? ` --local ${values.local}` : ''}\n`);
      return EXIT_OK;
    }
    const body: Record<string, unknown> = { name, location, deployment_model: deploymentModel, ...(environment ? { environment } : {}) };
    if (templateId !== undefined) {
      body.template_id = templateId;
      body.data_source = { name: 'mongodb-atlas', type: 'mongodb-atlas', config: { clusterName, readPreference: 'primary', wireProtocolEnabled: false }, version: 1 };
    }
    const app = (await client.request('POST', `/groups/${groupId}/apps`, { body, expect: [201] })).body as AppSummary;
    const backend = templateId !== undefined ? path.join(target, 'backend') : target;
    await exportInto(client, app, backend);
    if (templateId !== undefined) await clientInto(client, app, templateId, path.join(target, 'frontend', templateId));
    const result = {
      client_app_id: app.client_app_id, filepath: target, url: `${client.url}${ADMIN_API}/groups/${app.group_id}/apps/${app._id}`,
      ...(templateId !== undefined ? { backend } : {}), clusters: [{ name: templateId !== undefined ? 'mongodb-atlas' : 'cluster-source' }],
    };
    if (values.json) io.out(JSON.stringify(result) + '\n');
    else {
      io.out(`Successfully created app\n${JSON.stringify(result, null, 2)}\n`);
      io.out(`Check out your app: cd ./${path.relative(io.cwd, target) || '.'} && asl check\n`);
      const readme = templateId !== undefined ? path.join(target, 'frontend', templateId, 'README.md') : undefined;
      if (readme && fs.existsSync(readme)) io.out(`View directions on how to run the template app: ${path.relative(io.cwd, readme)}\n`);
    }
    return EXIT_OK;
  });
}

export async function runPull(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...common, remote: { type: 'string' }, local: { type: 'string' }, template: { type: 'string', short: 't', multiple: true }, yes: { type: 'boolean', short: 'y' }, 'dry-run': { type: 'boolean', short: 'x' } },
    strict: true,
  });
  if (values.help) { io.out(PULL_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'pull', async () => {
    let remote = values.remote;
    if (remote === undefined) {
      const here = await findAppRootUpwards(io.fs, io.cwd);
      remote = here ? appIdOf(here) : undefined;
      if (!remote) throw new CommandError('must specify --remote or run command from inside an app directory', true);
    }
    const client = AdminClient.forCommand(io, values.profile ?? 'default');
    const found = await client.findApp(remote);
    const app = (await client.request('GET', `/groups/${found.group_id}/apps/${found._id}`, { expect: [200] })).body as AppSummary;
    const templates = app.template_id ? (values.template ?? []) : [];
    if (templates.length > 0) {
      const compatible = (await client.request('GET', `/groups/${app.group_id}/apps/${app._id}/templates`, { expect: [200] })).body;
      for (const t of templates) {
        if (!Array.isArray(compatible) || !compatible.some((c) => isObject(c) && c.id === t)) throw new CommandError(`frontend template '${t}' is not compatible with this app`);
      }
    }
    const exported = await client.request('GET', `/groups/${app.group_id}/apps/${app._id}/export?source_control=true&version=20210101`, { raw: true, expect: [200] });
    const fileName = /filename="?([^";]+)"?/.exec(exported.headers.get('content-disposition') ?? '')?.[1];
    if (!fileName) throw new CommandError('export response is missing filename');
    const dir = path.resolve(io.cwd, values.local ?? fileName.replace(/\.zip$/, '').replace(/_[^_]*$/, ''));
    if (values['dry-run']) {
      io.out(values.json ? JSON.stringify({ dry_run: true, filepath: dir }) + '\n' : `No changes were written to your file system\nContents would have been written to: ${dir}\n`);
      return EXIT_OK;
    }
    if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0 && !(await confirm(io, `Directory '${dir}' already exists, do you still wish to proceed?`, values.yes, '--yes'))) return EXIT_PROBLEMS;
    const backend = templates.length > 0 ? path.join(dir, 'backend') : dir;
    writeZip(exported.bytes!, backend);
    for (const t of templates) await clientInto(client, app, t, path.join(dir, 'frontend', t));
    io.out(values.json ? JSON.stringify({ filepath: dir, client_app_id: app.client_app_id }) + '\n' : `Successfully pulled app down: ${path.relative(io.cwd, dir) || '.'}\n`);
    return EXIT_OK;
  });
}

export async function runPush(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...common, remote: { type: 'string' }, local: { type: 'string' }, yes: { type: 'boolean', short: 'y' }, 'dry-run': { type: 'boolean', short: 'x' } },
    strict: true,
  });
  if (values.help) { io.out(PUSH_HELP + '\n'); return EXIT_OK; }
  return guarded(io, 'push', async () => {
    const local = values.local !== undefined ? path.resolve(io.cwd, values.local) : await findAppRootUpwards(io.fs, io.cwd);
    if (!local || !fs.existsSync(path.join(local, 'realm_config.json'))) throw new CommandError(`no app found ${values.local ? `in ${values.local}` : 'here or in the parent folders'} (looked for realm_config.json)`, true);
    const remote = values.remote ?? appIdOf(local);
    if (!remote) throw new CommandError('must specify --remote, or give realm_config.json an app_id', true);
    const client = AdminClient.forCommand(io, values.profile ?? 'default');
    let app: AppSummary;
    try {
      app = await client.findApp(remote);
    } catch (e) {
      if (!(e instanceof CommandError) || !e.message.startsWith('failed to find app')) throw e;
      if (values['dry-run']) {
        io.out(values.json ? JSON.stringify({ client_app_id: remote, create: true, deployed: false }) + '\n' : `App '${remote}' does not exist yet: a push would create it\n`);
        return EXIT_OK;
      }
      if (!(await confirm(io, `App '${remote}' cannot be found. Do you wish to create a new app?`, values.yes, '--yes'))) return EXIT_PROBLEMS;
      app = await createForPush(client, local);
    }
    const body = filesToAppJsonOrError(local);
    const base = `/groups/${app.group_id}/apps/${app._id}`;
    const diffs = (await client.request('POST', `${base}/import?diff=true&strategy=replace-by-name`, { body, expect: [200] })).body;
    const lines = Array.isArray(diffs) ? diffs.map(String) : [];
    if (lines.length === 0) {
      io.out(values.json ? JSON.stringify({ client_app_id: app.client_app_id, diffs: [], deployed: false }) + '\n' : 'Deployed app is identical to proposed version, nothing to do\n');
      return EXIT_OK;
    }
    if (!values.json) io.out(`The following reflects the proposed changes to your app\n${lines.join('\n')}\n`);
    if (values['dry-run']) {
      if (values.json) io.out(JSON.stringify({ client_app_id: app.client_app_id, diffs: lines, deployed: false }) + '\n');
      return EXIT_OK;
    }
    if (!(await confirm(io, 'Please confirm the changes shown above', values.yes, '--yes'))) return EXIT_PROBLEMS;
    const draftId = await createDraft(client, base, io, values.yes);
    try {
      await client.request('POST', `${base}/import?strategy=replace-by-name`, { body, expect: [204] });
    } catch (e) {
      await client.request('DELETE', `${base}/drafts/${draftId}`).catch(() => undefined);
      throw e;
    }
    let deployment = (await client.request('POST', `${base}/drafts/${draftId}/deployment`, { expect: [201] })).body as Record<string, unknown>;
    const deadline = Date.now() + 5 * 60 * 1000;
    while ((deployment.status === 'created' || deployment.status === 'pending') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      deployment = (await client.request('GET', `${base}/deployments/${String(deployment._id)}`, { expect: [200] })).body as Record<string, unknown>;
    }
    if (deployment.status === 'failed') throw new CommandError(`failed to deploy app: ${String(deployment.status_error_message)}`);
    if (deployment.status !== 'successful') throw new CommandError(`the deployment did not finish (status "${String(deployment.status)}")`);
    io.out(values.json ? JSON.stringify({ client_app_id: app.client_app_id, diffs: lines, deployed: true }) + '\n' : `Deployment complete\nSuccessfully pushed app up: ${app.client_app_id}\n`);
    return EXIT_OK;
  });
}

/** The create path of a push: a new app named as the local one; realm_config.json then names it (as the platform CLI rewrites it). */
async function createForPush(client: AdminClient, local: string): Promise<AppSummary> {
  const configPath = path.join(local, 'realm_config.json');
  const config: unknown = JSON.parse(fs.readFileSync(configPath, 'utf8'));
  if (!isObject(config) || typeof config.name !== 'string') throw new CommandError('realm_config.json has no "name" to create the app with');
  const [groupId] = await client.groupIds();
  if (!groupId) throw new CommandError('failed to find group');
  const body = Object.fromEntries(['name', 'location', 'deployment_model', 'environment'].filter((k) => typeof config[k] === 'string' && config[k] !== '').map((k) => [k, config[k]]));
  const created = (await client.request('POST', `/groups/${groupId}/apps`, { body, expect: [201] })).body as AppSummary;
  const rewritten = { ...config, app_id: created.client_app_id, name: created.name, location: created.location, deployment_model: created.deployment_model, ...(created.environment ? { environment: created.environment } : {}) };
  fs.writeFileSync(configPath, JSON.stringify(rewritten, null, 2) + '\n');
  return created;
}

async function createDraft(client: AdminClient, base: string, io: CliIO, yes: boolean | undefined): Promise<string> {
  try {
    return String(((await client.request('POST', `${base}/drafts`, { expect: [201] })).body as Record<string, unknown>)._id);
  } catch (e) {
    if (!(e instanceof CommandError) || !/draft already exists/i.test(e.message)) throw e;
  }
  const drafts = (await client.request('GET', `${base}/drafts`, { expect: [200] })).body;
  if (!Array.isArray(drafts) || drafts.length !== 1 || !isObject(drafts[0])) throw new CommandError('failed to find draft');
  const old = String(drafts[0]._id);
  if (!(await confirm(io, 'Would you like to discard this draft?', yes, '--yes'))) throw new CommandError('a draft already exists; discard it to push');
  await client.request('DELETE', `${base}/drafts/${old}`, { expect: [204] });
  return String(((await client.request('POST', `${base}/drafts`, { expect: [201] })).body as Record<string, unknown>)._id);
}

async function exportInto(client: AdminClient, app: AppSummary, dir: string): Promise<void> {
  const exported = await client.request('GET', `/groups/${app.group_id}/apps/${app._id}/export?source_control=true&version=20210101`, { raw: true, expect: [200] });
  writeZip(exported.bytes!, dir);
}

async function clientInto(client: AdminClient, app: AppSummary, templateId: string, dir: string): Promise<void> {
  const res = await client.request('GET', `/groups/${app.group_id}/apps/${app._id}/templates/${templateId}/client`, { raw: true, expect: [200, 204] });
  if (res.status === 204) return;
  writeZip(res.bytes!, dir);
}

/** Unpacks a zip under `dir`; entries that would land outside it are refused. */
function writeZip(bytes: Uint8Array, dir: string): void {
  let entries: Record<string, Uint8Array>;
  try { entries = unzipSync(bytes); } catch (e) { throw new CommandError(`the runtime sent an unreadable zip: ${(e as Error).message}`); }
  for (const [name, data] of Object.entries(entries)) {
    if (name.endsWith('/')) continue;
    const abs = path.resolve(dir, name);
    if (!abs.startsWith(path.resolve(dir) + path.sep)) throw new CommandError(`the zip holds an entry outside its folder: ${name}`);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, data, { mode: 0o644 });
  }
}

function appIdOf(dir: string): string | undefined {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(path.join(dir, 'realm_config.json'), 'utf8'));
    return isObject(value) && typeof value.app_id === 'string' && value.app_id ? value.app_id : undefined;
  } catch {
    return undefined;
  }
}

/** The import body of the app folder's files (runtime data, packages and git left out). */
export function readLocalAppFiles(dir: string): FileMap {
  const files: FileMap = new Map();
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const rel = path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (rel.startsWith('.asl/') || rel.startsWith('.git/') || rel.split('/').includes('node_modules') || !isTransferredPath(rel)) continue;
    files.set(rel, fs.readFileSync(path.join(dir, rel), 'utf8'));
  }
  return files;
}

function filesToAppJsonOrError(dir: string): Record<string, unknown> {
  try {
    return filesToAppJson(readLocalAppFiles(dir));
  } catch (e) {
    throw new CommandError(`cannot read the app in ${dir}: ${(e as Error).message}`);
  }
}
