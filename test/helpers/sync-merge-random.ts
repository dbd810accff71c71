// Random valid write transactions over the test schema (sync-merge-build.ts), made against a client's
// current state the way a Realm SDK would emit them: right list sizes, existing objects only.
import { applyChangeset, cloneState, keyText, type RealmState, type Value } from '../../runtime/sync/merge/apply';
import type { Instruction } from '../../runtime/sync/wire/instructions';
import { add, clear, create, erase, insert, int, link, move, pk, remove, SCHEMA, set, setErase, setInsert, str } from './sync-merge-build';
import { settle, SimClient, SimServer } from './sync-merge-sim';

type Choose = (n: number) => number;

/**
 * Plays a scenario from a choice sequence (fast-check shrinks the sequence): each client's first
 * changeset is the schema, then random writes (with clocks that may tie), uploads and downloads, then
 * everything is synced. `trace` sees each step.
 */
export function playScenario(clientCount: number, choices: number[], trace?: (line: string, instructions?: Instruction[]) => void) {
  let at = 0;
  const choose = (n: number) => (at < choices.length ? choices[at++] % n : 0);
  const server = new SimServer();
  const clients = Array.from({ length: clientCount }, (_, i) => new SimClient(BigInt(i + 2)));
  const clocks = clients.map(() => 1000n);
  const tick = (i: number) => (clocks[i] += BigInt(choose(3)));
  clients.forEach((client, i) => client.write(SCHEMA, tick(i)));
  while (at < choices.length) {
    const i = choose(clientCount);
    const client = clients[i];
    const action = choose(4);
    if (action <= 1) {
      const instructions = randomWrite(client.state, choose);
      const timestamp = tick(i);
      trace?.(`client ${client.ident} writes at ${timestamp}`, instructions);
      client.write(instructions, timestamp);
    } else if (action === 2 && client.pendingUploads > 0) {
      trace?.(`client ${client.ident} uploads`);
      client.uploadOne(server);
    } else if (action === 3 && client.pendingDownloads(server) > 0) {
      trace?.(`client ${client.ident} downloads`);
      client.downloadOne(server);
    }
  }
  trace?.('settle');
  settle(server, clients);
  return { server, clients };
}

const WORDS = ['a', 'b', 'c', 'd'];
const KEYS = ['k1', 'k2', 'k3'];

/** 1–4 instructions valid on `state`, chosen by `choose`. */
export function randomWrite(state: RealmState, choose: Choose): Instruction[] {
  const scratch = cloneState(state);
  const out: Instruction[] = [];
  const count = 1 + choose(4);
  for (let i = 0; i < count; i++) {
    const step = randomStep(scratch, choose);
    applyChangeset(scratch, step);
    out.push(...step);
  }
  return out;
}

function fieldsOf(state: RealmState, table: string, n: number): Map<string, Value> | undefined {
  return state.tables.get(table)?.objects.get(keyText(pk(n)))?.fields;
}

function sizeOf(value: Value | undefined): number {
  return value?.kind === 'list' ? value.items.length : 0;
}

function randomStep(state: RealmState, choose: Choose): Instruction[] {
  const word = () => str(WORDS[choose(WORDS.length)]);
  if (choose(16) === 0) {
    const person = 1 + choose(2);
    return fieldsOf(state, 'Person', person) ? [erase(person, 'Person')] : [create(person, 'Person'), set(person, 'name', word(), [], 0, 'Person')];
  }
  const n = 1 + choose(2);
  const fields = fieldsOf(state, 'Task', n);
  if (!fields) return [create(n)];
  const tags = sizeOf(fields.get('tags'));
  const items = sizeOf(fields.get('items'));
  const moveIn = (field: string, size: number): Instruction[] => {
    if (size < 2) return [];
    const from = choose(size);
    return [move(n, field, [from], (from + 1 + choose(size - 1)) % size, size)];
  };
  // Weighted: list and embedded-object edits most often, erasing and clearing rarely. No moves in the
  // list of embedded objects: realm-core 14.14 does not shift a path through a moved element (see the
  // merge's README), so clients diverge there with realm-core's own rules too.
  const steps: [number, () => Instruction[]][] = [
    [3, () => [set(n, 'name', word())]],
    [1, () => [{ ...set(n, 'name', word()), isDefault: true } as Instruction]],
    [2, () => [set(n, 'count', int(choose(5)))]],
    [2, () => [add(n, 'count', 1 + choose(3))]],
    [1, () => [erase(n)]],
    [6, () => [insert(n, 'tags', [choose(tags + 1)], word(), tags)]],
    [3, () => (tags ? [remove(n, 'tags', [choose(tags)], tags)] : [])],
    [6, () => moveIn('tags', tags)],
    [3, () => (tags ? [set(n, 'tags', word(), [choose(tags)], tags)] : [])],
    [1, () => [clear(n, 'tags', 'list')]],
    [4, () => [choose(2) ? setInsert(n, WORDS[choose(3)]) : setErase(n, WORDS[choose(3)])]],
    [1, () => [clear(n, 'labels', 'set')]],
    [4, () => [set(n, 'attrs', choose(3) ? word() : { type: 'erased' }, [KEYS[choose(KEYS.length)]])]],
    [1, () => [clear(n, 'attrs', 'dictionary')]],
    [4, () => {
      const at = choose(items + 1);
      return [insert(n, 'items', [at], { type: 'objectValue' }, items), set(n, 'items', word(), [at, 'text'])];
    }],
    [4, () => (items ? [choose(2) ? set(n, 'items', word(), [choose(items), 'text']) : set(n, 'items', int(choose(9)), [choose(items), 'qty'])] : [])],
    [2, () => (items ? [remove(n, 'items', [choose(items)], items)] : [])],
    [1, () => [clear(n, 'items', 'list')]],
    [2, () => [set(n, 'owner', choose(3) ? link('Person', 1 + choose(2)) : { type: 'null' })]],
  ];
  let pick = choose(steps.reduce((sum, [weight]) => sum + weight, 0));
  for (const [weight, step] of steps) {
    if (pick < weight) return step();
    pick -= weight;
  }
  return [];
}
