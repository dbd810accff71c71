// `asl admin-keys [dir] [--data DIR] [--rotate] [--json]`: the admin API key pair of a runtime data folder.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadOrCreateAdminKey, rotateAdminKey } from '../runtime/admin/keys';
import { resolveServeTarget } from './serve';
import { EXIT_OK, EXIT_USAGE, UsageError, type CliIO } from './io';

export const ADMIN_KEYS_HELP = `Usage: asl admin-keys [dir] [--data DIR] [--rotate] [--json]

Prints the admin API public key of the data folder "asl serve [dir]" uses (<dir>/.asl, or --data).
The private key is shown only when a pair is made: on the first "asl serve", or here with --rotate,
which replaces the pair (sessions already open stay valid until they end). A running runtime sees the
new pair at its next login.

Options:
  --data DIR   the runtime's data folder (as given to asl serve)
  --rotate     make a new key pair and print it once
  --json       print {"public_key", "private_key"?} instead
  -h, --help   show this help`;

export async function runAdminKeys(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { data: { type: 'string' }, rotate: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(ADMIN_KEYS_HELP + '\n'); return EXIT_OK; }
  if (positionals.length > 1) throw new UsageError('asl admin-keys takes at most one folder');
  let dataDir: string;
  if (values.data !== undefined) dataDir = path.resolve(io.cwd, values.data);
  else {
    const target = await resolveServeTarget(io, positionals[0]);
    if (!target) { io.err('asl admin-keys: no app found here or in the parent folders; name the folder "asl serve" runs on, or give --data\n'); return EXIT_USAGE; }
    dataDir = path.join('appDir' in target ? target.appDir : target.rootDir, '.asl');
  }
  const adminDir = path.join(dataDir, 'admin');
  let publicKey: string;
  let privateKey: string | undefined;
  if (values.rotate) {
    ({ publicKey, privateKey } = await rotateAdminKey(adminDir));
  } else {
    const key = await loadOrCreateAdminKey(adminDir);
    publicKey = key.publicKey;
    privateKey = key.created?.privateKey;
  }
  if (values.json) io.out(JSON.stringify({ public_key: publicKey, ...(privateKey ? { private_key: privateKey } : {}) }) + '\n');
  else {
    io.out(`admin public key: ${publicKey}\n`);
    if (privateKey) io.out(`admin private key: ${privateKey}\n(shown once; only a hash of it is kept)\n`);
  }
  return EXIT_OK;
}
