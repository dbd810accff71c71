// realm-core's own App Services integration suite against the shipped `node dist/cli.js serve`: the `[baas]`
// test cases of realm-core's test/object-store/sync/app.cpp (../shared/realm-core-tests), which the platform's
// engineers ran against their server before every release. Each one creates an app through the Admin API, then
// drives the client API and partition sync with the SDKs' own client code. Each test case is a subtest of its
// own, run in a process of its own (a realm-core assertion aborts the whole process), one after another
// against one runtime serving an empty folder of apps.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DOMParser, type Element } from '@xmldom/xmldom';
import { REPO_ROOT } from '../helpers/disk';
import { serveDist, type ServedDist } from './fixtures/serve';

const SUITE = path.join(REPO_ROOT, '..', 'shared', 'realm-core-tests', 'realm-object-store-tests');
/** The admin user realm-core's harness logs in with (fixed in its baas_admin_api.cpp). */
const HARNESS_ADMIN = ['--admin-user', 'unique_user@domain.com', '--admin-password', 'password'];
const CASE_TIMEOUT_MS = 240_000;
/** Past its timeout a case gets SIGTERM, on which Catch2 reports where it was, then SIGKILL this much later. */
const KILL_GRACE_MS = 10_000;
/** How much of a killed or aborted process's output a failure shows. */
const OUTPUT_TAIL_CHARS = 4000;
/** At most this many failures, and this many runtime warnings, in a failure message. */
const MAX_LINES = 25;

function unavailableReason(): string | false {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `realm-object-store-tests is built for Linux x64 only, not ${process.platform} ${process.arch}`;
  if (!fs.existsSync(SUITE)) return `realm-object-store-tests (../shared/realm-core-tests) is not on this machine`;
  return false;
}

/**
 * The root element of Catch2's XML output, also when cut short: a process stopped by a signal leaves the run's
 * element open, so elements still open at the last complete tag are closed there (and what follows it dropped).
 */
function parseCatch2Xml(text: string): Element | undefined {
  const complete = text.slice(0, text.lastIndexOf('>') + 1);
  const open: string[] = [];
  for (const [, closing, name, selfClosing] of complete.matchAll(/<(\/?)([\w-]+)(?:[^>"]|"[^"]*")*?(\/?)>/g)) {
    if (closing) open.pop();
    else if (!selfClosing) open.push(name!);
  }
  try {
    return new DOMParser().parseFromString(complete + open.reverse().map((name) => `</${name}>`).join(''), 'text/xml').documentElement ?? undefined;
  } catch {
    return undefined;
  }
}

function childElements(element: Element): Element[] {
  return Array.from(element.childNodes).filter((n): n is Element => n.nodeType === 1);
}

function text(element: Element | undefined): string {
  return (element?.textContent ?? '').trim();
}

/** The names of app.cpp's `[baas]` test cases (none tagged `[flx]`), in declaration order. */
function appCppTestCases(): string[] {
  const listing = spawnSync(SUITE, ['--list-tests', '[baas]~[flx]', '-r', 'xml'], { encoding: 'utf8' });
  const root = listing.status === 0 ? parseCatch2Xml(listing.stdout) : undefined;
  if (!root) throw new Error(`realm-object-store-tests --list-tests failed (${listing.status ?? listing.signal}): ${listing.error ?? listing.stderr}`);
  const names = childElements(root)
    .filter((c) => c.getElementsByTagName('File')[0]?.textContent?.endsWith('/sync/app.cpp'))
    .map((c) => text(c.getElementsByTagName('Name')[0]));
  if (names.length === 0) throw new Error(`realm-object-store-tests lists no [baas] test case of app.cpp:\n${listing.stdout}`);
  return names;
}

/** A Catch2 test spec that matches exactly this test name: quoted, with the characters Catch2 reads specially escaped. */
function exactTestSpec(name: string): string {
  return `"${name.replace(/[\\[\]*,~"]/g, '\\$&')}"`;
}

/** Catch2's XML reporter captures the tests' own output for the report, the console reporter lets it through. */
type Reporter = 'xml' | 'console';

interface CaseRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  report: string;
  /** The tail of stdout and stderr together. */
  output: string;
  /** The runtime's warning and error lines logged while the case ran. */
  runtimeWarnings: string[];
}

let runningCase: ChildProcess | undefined;

async function runCase(name: string, served: ServedDist, reporter: Reporter): Promise<CaseRun> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-realm-core-'));
  const reportFile = path.join(dir, 'report.xml');
  const logStart = served.stderr().length;
  try {
    const child = spawn(SUITE, [exactTestSpec(name), ...(reporter === 'xml' ? ['-r', `xml::out=${reportFile}`] : [])], {
      cwd: dir, env: { ...process.env, TMPDIR: dir, BAAS_BASE_URL: served.url }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    runningCase = child;
    let output = '';
    const keep = (chunk: Buffer) => { output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS); };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS).unref();
    }, CASE_TIMEOUT_MS);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
      child.on('close', (c, s) => resolve([c, s]));
      child.on('error', (error) => { output += `\n${error.message}`; resolve([null, null]); });
    });
    clearTimeout(timer);
    runningCase = undefined;
    const runtimeWarnings = served.stderr().slice(logStart).split('\n').filter((line) => /^\S+ (warning|error): /.test(line));
    return { code, signal, timedOut, report: fs.existsSync(reportFile) ? fs.readFileSync(reportFile, 'utf8') : '', output, runtimeWarnings };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** `test/object-store/sync/app.cpp:687`, from an element's filename and line attributes. */
function where(element: Element): string {
  return `${element.getAttribute('filename')?.replace(/^realm-core\//, '')}:${element.getAttribute('line')}`;
}

/** One line per failed assertion, exception, fatal signal or FAIL() of the report's test case, with its section path. */
function failuresOf(testCase: Element): string[] {
  const lines: string[] = [];
  const visit = (element: Element, sections: string[]) => {
    // Catch2 writes the INFO messages of a failed assertion just before it.
    let info: string[] = [];
    const failed = (child: Element, what: string) => {
      const at = sections.length ? `[${sections.join(' > ')}] ` : '';
      const notes = info.length ? ` (info: ${info.join('; ')})` : '';
      lines.push(`${at}${where(child)} ${what}${notes}`.replace(/\s*\n\s*/g, ' '));
      info = [];
    };
    for (const child of childElements(element)) {
      switch (child.tagName) {
        case 'Section': visit(child, [...sections, child.getAttribute('name') ?? '']); break;
        case 'Info': info.push(text(child)); break;
        case 'Expression': {
          if (child.getAttribute('success') === 'true') break;
          const cause = childElements(child).find((c) => c.tagName === 'Exception' || c.tagName === 'FatalErrorCondition');
          const type = child.getAttribute('type'); // none when a fatal signal ended the test case after this line
          const expression = type ? `${type}( ${text(child.getElementsByTagName('Original')[0])} ) ` : '';
          failed(child, `${expression}${cause ? `${cause.tagName === 'Exception' ? 'threw' : 'fatal error'}: ${text(cause)}` : `with expansion: ${text(child.getElementsByTagName('Expanded')[0])}`}`);
          break;
        }
        case 'Exception': failed(child, `unexpected exception: ${text(child)}`); break;
        case 'FatalErrorCondition': failed(child, `fatal error: ${text(child)}`); break;
        case 'Failure': failed(child, `FAIL: ${text(child)}`); break;
        case 'StdOut': case 'StdErr': lines.push(`${child.tagName}: ${text(child).slice(-OUTPUT_TAIL_CHARS)}`); break;
      }
    }
  };
  visit(testCase, []);
  return lines;
}

function firstLines(lines: string[]): string[] {
  return lines.length > MAX_LINES ? [...lines.slice(0, MAX_LINES), `… and ${lines.length - MAX_LINES} more`] : lines;
}

/** Why the case failed, for a developer: the report's failures, else the process's output, and the runtime's warnings. */
function failureMessage(name: string, run: CaseRun, testCase: Element | undefined, consoleRerun: CaseRun | undefined, served: ServedDist): string {
  const ended = run.timedOut ? `timed out after ${CASE_TIMEOUT_MS / 1000} s (${run.signal})` : run.signal ? `ended by ${run.signal}` : `exited with ${run.code}`;
  const parts = [`${name}: ${ended}`];
  const failures = testCase ? failuresOf(testCase) : [];
  if (failures.length) parts.push('from the report:', ...firstLines(failures).map((l) => `  ${l}`));
  const complete = testCase?.getElementsByTagName('OverallResult').length;
  const output = run.output.replace(/^Test time: .*$/m, '').trim();
  if (!complete || output) parts.push(`${complete ? '' : 'no complete report; '}output tail:\n${output || '(none)'}`);
  if (consoleRerun) parts.push(`output tail of a rerun with the console reporter (${consoleRerun.signal ?? `exit ${consoleRerun.code}`}):\n${consoleRerun.output.trim()}`);
  if (run.runtimeWarnings.length) parts.push('runtime warnings and errors meanwhile:', ...firstLines(run.runtimeWarnings).map((l) => `  ${l.slice(0, 500)}`));
  if (served.child.exitCode !== null || served.child.signalCode !== null) parts.push(`the runtime has exited (${served.child.exitCode ?? served.child.signalCode}); its log ends:\n${served.stderr().slice(-OUTPUT_TAIL_CHARS)}`);
  return parts.join('\n');
}

const skip = unavailableReason();
const testCases = skip ? [] : appCppTestCases();

describe('realm-core app.cpp [baas] test cases against dist/cli.js serve', { skip }, () => {
  let appsDir: string;
  let served: ServedDist;
  let passed = 0;
  let suiteStart: number;

  before(async () => {
    appsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-realm-core-apps-'));
    served = await serveDist({ appDir: appsDir, args: ['--allow-no-apps', ...HARNESS_ADMIN] });
    suiteStart = Date.now();
  });

  after(async () => {
    runningCase?.kill('SIGKILL');
    console.log(`realm-core app.cpp: ${passed}/${testCases.length} test cases passed in ${((Date.now() - suiteStart) / 1000).toFixed(1)} s`);
    await served?.close();
    fs.rmSync(appsDir, { recursive: true, force: true, maxRetries: 3 });
  });

  for (const name of testCases) {
    // Room for the run and a rerun, each stopped at its own timeout.
    test(name, { timeout: 2 * (CASE_TIMEOUT_MS + KILL_GRACE_MS) + 10_000 }, async () => {
      const run = await runCase(name, served, 'xml');
      const root = parseCatch2Xml(run.report);
      const reported = root ? Array.from(root.getElementsByTagName('TestCase')) : [];
      if (reported.length) assert.deepEqual(reported.map((c) => c.getAttribute('name')), [name], 'the test spec must select exactly this test case');
      const testCase = reported[0];
      const succeeded = testCase?.getElementsByTagName('OverallResult')[0]?.getAttribute('success') === 'true';
      if (run.code === 0 && succeeded) { passed++; return; }
      // An aborted process loses what the XML reporter captured, where realm-core's default sync error
      // handler says why it aborts: a second run with the console reporter shows it.
      const consoleRerun = run.signal && !run.timedOut ? await runCase(name, served, 'console') : undefined;
      assert.fail(failureMessage(name, run, testCase, consoleRerun, served));
    });
  }
});
