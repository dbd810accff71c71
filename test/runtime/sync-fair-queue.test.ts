// The flexible history's queue (runtime/sync/sessions/fair-queue.ts): one task at a time, owners taking
// turns, each owner's tasks in order, the first owner ahead of the rest, a failing task failing alone.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FairQueue } from '../../runtime/sync/sessions/fair-queue';

describe('FairQueue', () => {
  test('owners take turns; each owner\'s tasks keep their order; never two at once', async () => {
    const queue = new FairQueue();
    const ran: string[] = [];
    let running = 0;
    const task = (name: string) => async () => {
      assert.equal(running++, 0, 'one task at a time');
      await new Promise((resolve) => setImmediate(resolve));
      ran.push(name);
      running--;
      return name;
    };
    const backlog = Array.from({ length: 5 }, (_, i) => queue.run('mallory', task(`m${i}`)));
    const others = [queue.run('ada', task('a0')), queue.run('ada', task('a1')), queue.run('bob', task('b0'))];
    assert.deepEqual(await Promise.all([...backlog, ...others]), ['m0', 'm1', 'm2', 'm3', 'm4', 'a0', 'a1', 'b0']);
    // m0 starts alone; ada and bob then join the turns behind mallory's next task.
    assert.deepEqual(ran, ['m0', 'm1', 'a0', 'b0', 'm2', 'a1', 'm3', 'm4']);
  });

  test('the first owner\'s waiting tasks go before anyone else\'s; a failing task fails alone', async () => {
    const queue = new FairQueue('store');
    const ran: string[] = [];
    const task = (name: string) => async () => { ran.push(name); };
    const first = queue.run('mallory', task('m0'));
    const rest = [queue.run('mallory', task('m1')), queue.run('store', task('s0')), queue.run('store', task('s1'))];
    const failing = queue.run('ada', async () => { throw new Error('boom'); });
    const after = queue.run('ada', task('a1'));
    await assert.rejects(failing, /boom/);
    await Promise.all([first, ...rest, after]);
    assert.deepEqual(ran, ['m0', 's0', 's1', 'm1', 'a1']);
  });
});
