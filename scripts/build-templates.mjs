// The web templates' clients (React), built into their backends' hosting/files, where the runtime's static
// hosting serves them at http://<app id>.localhost:<port>/. The output is generated (git-ignored); the
// template engine writes the new app's atlasConfig.json next to it.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const TEMPLATES = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..', 'templates');
const HOSTED = [['web.mql.todo', 'web-js'], ['web.data-api.todo', 'web-js-data-api']];

export async function buildHostedTemplates() {
  await Promise.all(HOSTED.map(async ([client, backend]) => {
    const from = path.join(TEMPLATES, client);
    const files = path.join(TEMPLATES, backend, 'hosting', 'files');
    fs.rmSync(files, { recursive: true, force: true });
    fs.mkdirSync(files, { recursive: true });
    for (const file of ['index.html', 'styles.css']) fs.copyFileSync(path.join(from, 'public', file), path.join(files, file));
    await esbuild.build({
      entryPoints: [path.join(from, 'src', 'main.jsx')],
      outfile: path.join(files, 'app.js'),
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2020',
      jsx: 'automatic',
      define: { 'process.env.NODE_ENV': '"production"' },
      logLevel: 'warning',
      legalComments: 'none',
    });
  }));
}
