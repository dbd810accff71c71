// Which Node runs the function process while debugging (runtime/functions/functionNode.ts): the named one
// (which must have --allow-inspector), this one when it can, else the first on PATH that can, or a refusal
// that says what to do. Real binaries: this Node, and the editor tests' Node 24 when installed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { currentNode, findDebugNode, nodesOnPath, probeNode, type FunctionNode } from '../../runtime/functions/functionNode';
import { nodeWithInspectorPermission } from '../helpers/cdp';

const older: FunctionNode = { execPath: '/usr/bin/node', version: '20.20.2', permissionFlag: '--experimental-permission', allowNet: false, allowInspector: false };
const newer = (execPath: string): FunctionNode => ({ execPath, version: '24.21.0', permissionFlag: '--permission', allowNet: false, allowInspector: true });

describe('the Node of the function process while debugging', () => {
  test('probing a real binary gives what that Node offers; a missing or non-Node file is refused by name', () => {
    const self = probeNode(process.execPath);
    assert.deepEqual(self, currentNode());
    assert.match((probeNode('/nonexistent/node') as { error: string }).error, /does not exist/);
    assert.match((probeNode('relative/node') as { error: string }).error, /not an absolute path/);
    assert.match((probeNode('/bin/true') as { error: string }).error, /is not a Node binary/);
  });

  test('a Node 24 probed says it can grant the inspector, with its own permission flag', { skip: (() => { try { nodeWithInspectorPermission(); return false; } catch { return 'no Node 24 installed'; } })() }, () => {
    const found = probeNode(nodeWithInspectorPermission());
    assert.ok(!('error' in found));
    assert.equal(found.allowInspector, true);
    assert.equal(found.permissionFlag, '--permission');
  });

  test('the order: named, this Node, the first suitable on PATH; else the refusal names what to do', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-node-path-'));
    try {
      for (const d of ['a', 'b', 'c']) { fs.mkdirSync(path.join(dir, d)); fs.writeFileSync(path.join(dir, d, 'node'), ''); }
      const pathValue = ['relative', path.join(dir, 'a'), path.join(dir, 'missing'), path.join(dir, 'b'), path.join(dir, 'a'), path.join(dir, 'c')].join(':');
      assert.deepEqual(nodesOnPath(pathValue, 'linux'), [path.join(dir, 'a', 'node'), path.join(dir, 'b', 'node'), path.join(dir, 'c', 'node')]);
      const probed: string[] = [];
      const probe = (execPath: string) => { probed.push(execPath); return execPath.includes(`${path.sep}b${path.sep}`) ? newer(execPath) : { ...older, execPath }; };
      assert.equal((findDebugNode({ pathValue, current: older, probe }) as FunctionNode).execPath, path.join(dir, 'b', 'node'));
      assert.deepEqual(probed, [path.join(dir, 'a', 'node'), path.join(dir, 'b', 'node')]);
      // This Node can: PATH is not looked at.
      probed.length = 0;
      assert.equal((findDebugNode({ pathValue, current: newer('/self'), probe }) as FunctionNode).execPath, '/self');
      assert.deepEqual(probed, []);
      // Named: that one or a refusal, never another.
      assert.equal((findDebugNode({ named: path.join(dir, 'b', 'node'), pathValue, current: older, probe }) as FunctionNode).execPath, path.join(dir, 'b', 'node'));
      assert.match((findDebugNode({ named: path.join(dir, 'a', 'node'), pathValue, current: older, probe }) as { error: string }).error, /^--functions-node: .* is Node 20\.20\.2, whose permission model has no --allow-inspector/);
      const none = findDebugNode({ pathValue: path.join(dir, 'a'), current: older, probe }) as { error: string };
      assert.match(none.error, /the runtime runs on Node 20\.20\.2, and PATH has no such Node \(.*is Node 20\.20\.2\)/);
      assert.match(none.error, /--functions-node PATH .*appServicesLocal\.runtime\.functionsNodePath/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
