// Each template client's README tells the truth about Device Sync against the local runtime: its "What
// works against the local runtime" table puts Device Sync under "Works" exactly when the template's backend
// syncs (sync/config.json: enabled, flexible or partition) and a test drives a real Realm sync client (the
// probe) against that backend; otherwise under "Does not work locally". Which backends have such a test is
// read from test/dist: a test file using the probe that names a template id sharing the backend.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { TEMPLATES, type TemplateBackend } from '../../core/templates/catalogue';
import { REPO_ROOT } from '../helpers/disk';

const TEMPLATES_DIR = path.join(REPO_ROOT, 'templates');
const SYNC_TESTS_DIR = path.join(REPO_ROOT, 'test/dist');

function backendSyncs(backend: TemplateBackend): boolean {
  const file = path.join(TEMPLATES_DIR, backend, 'sync/config.json');
  if (!fs.existsSync(file)) return false;
  const config = JSON.parse(fs.readFileSync(file, 'utf8')) as { type?: string; state?: string };
  return config.state === 'enabled' && (config.type === 'flexible' || config.type === 'partition');
}

/** The backends some probe-driven test in test/dist creates from a template, by the template id it names. */
function backendsWithSyncTests(): Map<TemplateBackend, string> {
  const out = new Map<TemplateBackend, string>();
  for (const name of fs.readdirSync(SYNC_TESTS_DIR).filter((f) => f.endsWith('.test.ts'))) {
    const source = fs.readFileSync(path.join(SYNC_TESTS_DIR, name), 'utf8');
    // A test that makes an app from a template (core/templates) and drives the probe against it.
    if (!source.includes('../helpers/realm-probe') || !source.includes('core/templates')) continue;
    for (const template of TEMPLATES) {
      if (source.includes(`'${template.id}'`) && !out.has(template.backend)) out.set(template.backend, name);
    }
  }
  return out;
}

/** The rows of the README's "What works against the local runtime" table: [works, does not work]. */
function worksTable(readme: string): [string, string][] {
  const start = readme.indexOf('## What works against the local runtime');
  if (start < 0) return [];
  const next = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, next < 0 ? undefined : next);
  return section.split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[\s|-]+\|$/.test(line))
    .slice(1)
    .map((line) => {
      const cells = line.slice(1, line.lastIndexOf('|')).split('|').map((c) => c.trim());
      return [cells[0] ?? '', cells[1] ?? ''];
    });
}

const SAYS_NOT_LOCAL = /needs the cloud platform|has not been checked against a Realm client|does not run locally|cannot sync/i;

describe('template client READMEs tell the truth about Device Sync', () => {
  const tested = backendsWithSyncTests();
  const clients = TEMPLATES.filter((t) => t.client);

  test('the probe-driven template tests are found', () => {
    assert.ok(tested.size > 0, `no test in ${SYNC_TESTS_DIR} drives the probe against a template backend`);
    for (const backend of tested.keys()) assert.ok(backendSyncs(backend), `${tested.get(backend)} syncs with backend ${backend}, whose sync/config.json does not enable sync`);
  });

  for (const template of clients) {
    test(`${template.id}`, () => {
      const readme = fs.readFileSync(path.join(TEMPLATES_DIR, template.client!.dir, 'README.md'), 'utf8');
      const rows = worksTable(readme);
      const works = rows.filter(([cell]) => /Device Sync/.test(cell));
      const doesNot = rows.filter(([, cell]) => /Device Sync/.test(cell));
      assert.ok(works.length + doesNot.length > 0, 'the "What works against the local runtime" table has a Device Sync row');
      const syncs = backendSyncs(template.backend);
      const test = tested.get(template.backend);
      if (syncs && test) {
        assert.deepEqual(doesNot.map(([, cell]) => cell), [], `backend ${template.backend} syncs and ${test} syncs it with a Realm client: Device Sync works locally`);
        assert.ok(works.length > 0, 'Device Sync is in the "Works" column');
        const denial = readme.split('\n').find((line) => /Device Sync|--sync|\bsync\b/i.test(line) && SAYS_NOT_LOCAL.test(line));
        assert.equal(denial, undefined, 'no line says sync does not run locally');
      } else {
        const why = syncs ? `no test in test/dist syncs backend ${template.backend} with a Realm client` : `backend ${template.backend} does not sync`;
        assert.deepEqual(works.map(([cell]) => cell), [], `${why}: the README must not claim Device Sync works locally`);
      }
    });
  }
});
