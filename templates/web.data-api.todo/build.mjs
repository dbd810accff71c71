// Builds the app into dist/ (index.html, styles.css, app.js, atlasConfig.json); `--serve` also serves
// dist/ on http://localhost:5173 and rebuilds on change.
import * as esbuild from 'esbuild';
import fs from 'node:fs';

const serve = process.argv.includes('--serve');
fs.mkdirSync('dist', { recursive: true });
for (const file of ['index.html', 'styles.css']) fs.copyFileSync(`public/${file}`, `dist/${file}`);
fs.copyFileSync('src/atlasConfig.json', 'dist/atlasConfig.json');

const options = {
  entryPoints: ['src/main.jsx'],
  outfile: 'dist/app.js',
  bundle: true,
  minify: !serve,
  format: 'esm',
  platform: 'browser',
  target: 'es2020',
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': serve ? '"development"' : '"production"' },
  logLevel: 'info',
};
if (serve) {
  const context = await esbuild.context(options);
  await context.watch();
  const { port } = await context.serve({ servedir: 'dist', port: 5173 });
  console.log(`serving on http://localhost:${port}`);
} else {
  await esbuild.build(options);
}
