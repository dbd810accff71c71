// The command map in client/commands.ts is the one source of command ids; the manifest fragment the
// client ships (client/contributes.json) and the merged package.json must declare exactly those commands.
import { describe, test } from 'node:test';
import { APP_SERVICES_DEBUG_TYPE, defaultLaunchConfiguration } from '../../client/functionsDebugConfig';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { commandCategory, commands, runtimeRunningContext } from '../../client/commands';

const root = path.resolve(__dirname, '../..');

interface CommandContribution { command: string; title: string; category?: string }

function contributedCommands(file: string): CommandContribution[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, file), 'utf8')) as { contributes?: { commands?: CommandContribution[] } };
  return manifest.contributes?.commands ?? [];
}

const expected = Object.values(commands)
  .map((c) => ({ command: c.id, title: c.title, category: commandCategory }))
  .sort((a, b) => a.command.localeCompare(b.command));

describe('command ids', () => {
  test('every id is unique and in the extension namespace', () => {
    const ids = Object.values(commands).map((c) => c.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, /^appServicesLocal\.[a-z][A-Za-z]+$/);
  });

  for (const file of ['client/contributes.json', 'package.json']) {
    test(`${file} contributes exactly the commands of the map, with their titles and category`, () => {
      const declared = contributedCommands(file)
        .map((c) => ({ command: c.command, title: c.title, category: c.category }))
        .sort((a, b) => a.command.localeCompare(b.command));
      assert.deepEqual(declared, expected);
    });
  }

  test('package.json has the activation events and settings of client/contributes.json', () => {
    const fragment = JSON.parse(fs.readFileSync(path.join(root, 'client/contributes.json'), 'utf8'));
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    for (const event of fragment.activationEvents) assert.ok(manifest.activationEvents.includes(event), `missing activation event ${event}`);
    assert.deepEqual(manifest.contributes?.configuration, fragment.contributes.configuration);
  });

  test('package.json contributes the app-services launch type of client/contributes.json, with a snippet and activation on it', () => {
    const fragment = JSON.parse(fs.readFileSync(path.join(root, 'client/contributes.json'), 'utf8'));
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    assert.deepEqual(manifest.contributes?.debuggers, fragment.contributes.debuggers);
    const [debuggerContribution] = manifest.contributes.debuggers;
    assert.equal(debuggerContribution.type, APP_SERVICES_DEBUG_TYPE);
    assert.deepEqual(debuggerContribution.configurationSnippets.map((s: { body: unknown }) => s.body), [defaultLaunchConfiguration()]);
    assert.deepEqual(debuggerContribution.initialConfigurations, [defaultLaunchConfiguration()]);
    assert.deepEqual(Object.keys(debuggerContribution.configurationAttributes.launch.properties), ['app']);
    assert.ok(manifest.activationEvents.includes(`onDebugResolve:${APP_SERVICES_DEBUG_TYPE}`));
  });
});

describe('the walkthrough', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const fragment = JSON.parse(fs.readFileSync(path.join(root, 'client/contributes.json'), 'utf8'));
  const steps: Array<{ id: string; description: string; media: { markdown?: string }; completionEvents: string[] }> = manifest.contributes.walkthroughs[0].steps;
  const ownIds = new Set<string>(Object.values(commands).map((c) => c.id));
  const builtIn = new Set(['workbench.action.files.openFolder', 'workbench.actions.view.problems']);

  test('package.json has the walkthrough of client/contributes.json', () => {
    assert.deepEqual(manifest.contributes.walkthroughs, fragment.contributes.walkthroughs);
  });

  test('each step has a button running a command that exists, a completion event, and its media file', () => {
    assert.deepEqual(steps.map((s) => s.id), ['openApp', 'seeProblems', 'startRuntime', 'runQuery', 'openPartition', 'writeSchema']);
    for (const step of steps) {
      const buttons = [...step.description.matchAll(/\]\(command:([A-Za-z.]+)\)/g)].map((m) => m[1]!);
      assert.ok(buttons.length > 0, `${step.id} has no button`);
      for (const id of buttons) assert.ok(ownIds.has(id) || builtIn.has(id), `${step.id}: ${id} is not a command`);
      assert.ok(step.completionEvents.length > 0, `${step.id} never completes`);
      for (const event of step.completionEvents) {
        const command = /^onCommand:(.+)$/.exec(event)?.[1];
        if (command) assert.ok(ownIds.has(command) || builtIn.has(command), `${step.id}: ${event} names no command`);
      }
      assert.ok(step.media.markdown && fs.existsSync(path.join(root, step.media.markdown)), `${step.id}: ${step.media.markdown}`);
    }
  });

  test('the runtime step completes on the context key the runtime controller sets', () => {
    const runtimeStep = steps.find((s) => s.id === 'startRuntime')!;
    assert.deepEqual(runtimeStep.completionEvents, [`onContext:${runtimeRunningContext}`]);
    assert.match(fs.readFileSync(path.join(root, 'client/runtimeController.ts'), 'utf8'), /'setContext', runtimeRunningContext/);
  });
});
