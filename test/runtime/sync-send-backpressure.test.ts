// SendBackpressure (runtime/sync/sessions/send-backpressure.ts): a sync connection stops making DOWNLOADs
// while its socket holds more than the high-water mark, goes on once drained, and gives up on a client that
// takes in nothing of what its socket holds for the stall limit, above the mark or below it (a slow reader
// that takes in some keeps its connection). The clock
// and the timer are injected; the end-to-end figure with real sockets is in the reliability suite.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SendBackpressure } from '../../runtime/sync/sessions/send-backpressure';

function harness(start: number) {
  let buffered = start;
  let now = 0;
  let tick: (() => void) | undefined;
  const events: string[] = [];
  const gate = new SendBackpressure({
    buffered: () => buffered, highWater: 1000, lowWater: 200, stalledMs: 1000,
    onDrained: () => events.push('drained'), onStalled: (bytes) => events.push(`stalled ${bytes}`),
    now: () => now, setInterval: (run) => { tick = run; return 1; }, clearInterval: () => { tick = undefined; },
  });
  return {
    gate, events,
    set: (bytes: number) => { buffered = bytes; },
    advance(ms: number) { for (let t = 0; t < ms; t += 50) { now += 50; tick?.(); } },
    armed: () => tick !== undefined,
  };
}

describe('sync send backpressure', () => {
  test('below the high-water mark nothing is held', () => {
    const h = harness(1000);
    assert.equal(h.gate.blocked(), false);
    assert.equal(h.armed(), false);
  });

  test('above it DOWNLOADs wait until the socket drains below the low-water mark', () => {
    const h = harness(5000);
    assert.equal(h.gate.blocked(), true);
    h.set(600);
    h.advance(200);
    // Under the high mark but not the low one: still held.
    assert.equal(h.gate.blocked(), true);
    assert.deepEqual(h.events, []);
    h.set(100);
    h.advance(50);
    assert.deepEqual(h.events, ['drained']);
    assert.equal(h.gate.blocked(), false);
    // The rest is still watched until the socket is empty.
    assert.equal(h.armed(), true);
    h.set(0);
    h.advance(50);
    assert.equal(h.armed(), false);
  });

  test('a client that takes in nothing for the stall limit is given up; a slow one that takes in some is not', () => {
    const slow = harness(50_000);
    slow.gate.blocked();
    for (let i = 1; i <= 10; i++) { slow.set(50_000 - i * 100); slow.advance(500); }
    assert.deepEqual(slow.events, [], 'a reader that takes in a little every half second keeps its connection');
    const stalled = harness(50_000);
    stalled.gate.blocked();
    stalled.advance(950);
    assert.deepEqual(stalled.events, []);
    stalled.advance(100);
    assert.deepEqual(stalled.events, ['stalled 50000']);
    assert.equal(stalled.armed(), false);
  });

  test('bytes left after a send are watched below the mark too: a client that never takes them in is given up', () => {
    const h = harness(0);
    h.gate.sent();
    assert.equal(h.armed(), false, 'nothing queued, nothing to watch');
    h.set(300);
    h.gate.sent();
    assert.equal(h.gate.blocked(), false);
    h.advance(1050);
    assert.deepEqual(h.events, ['stalled 300']);
  });

  test('dispose stops the watch', () => {
    const h = harness(5000);
    h.gate.blocked();
    h.gate.dispose();
    assert.equal(h.armed(), false);
    h.advance(5000);
    assert.deepEqual(h.events, []);
  });
});
