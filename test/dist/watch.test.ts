// `asl serve` (the shipped bundle) keeps seeing edits to a file saved by replacement: written to a temporary
// file, then renamed over the old one, as `sed -i`, many editors and git checkout do. Each of three such
// saves of a resolver's function must be served over HTTP.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { graphql, registerAndLogIn, serveDist, type ServedDist } from './fixtures/serve';

/** What `sed -i` does: write the new text beside the file, then rename it over the file (a new inode). */
function replaceSave(file: string, text: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(temporary, text);
  fs.renameSync(temporary, file);
}

const summaryFunction = (version: number) =>
  `exports = async function ({ owner }) {\n  return { owner, status: "version ${version}", count: ${version} };\n};\n`;

describe('dist/cli.js serve reloads files saved by replacement', () => {
  let served: ServedDist;
  let token = '';

  before(async () => {
    served = await serveDist();
    token = (await registerAndLogIn(served.app, 'watch@example.com', 'watch-password-1')).access_token;
  });
  after(async () => { await served?.close(); });

  test('three replace-saves of functions/taskSummary.js are each served', async () => {
    const file = path.join(served.appDir, 'functions/taskSummary.js');
    for (const version of [1, 2, 3]) {
      const reloads = served.countLog(/reloaded/);
      replaceSave(file, summaryFunction(version));
      await served.waitForLog(/reloaded/, { count: reloads + 1, timeoutMs: 15000 });
      const res = await graphql(`${served.app}/graphql`, token, '{ taskSummary(input: { owner: "me", status: "open" }) { status count } }');
      assert.deepEqual(res.body, { data: { taskSummary: { status: `version ${version}`, count: version } } }, `save ${version}`);
    }
  });
});
