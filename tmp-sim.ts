import { ObjectId } from 'bson';
import { SimClient, SimServer, dumps } from './test/helpers/sync-merge-sim';
import type { Instruction } from './runtime/sync/wire/instructions';
const id = new ObjectId('65e000000000000000000001');
const obj = { type: 'objectId' as const, value: id };
const schema: Instruction[] = [{ type: 'AddTable', table: 'Item', spec: { kind: 'topLevel', pkField: '_id', pkType: 'objectId', pkNullable: false, asymmetric: false } }, { type: 'AddColumn', table: 'Item', field: 'tags', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'list' }, { type: 'AddColumn', table: 'Item', field: 'name', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' }];
const ins = (i: number, v: string, prior: number): Instruction => ({ type: 'ArrayInsert', table: 'Item', object: obj, field: 'tags', path: [i], value: { type: 'string', value: v }, priorSize: prior });
const erase = (i: number, prior: number): Instruction => ({ type: 'ArrayErase', table: 'Item', object: obj, field: 'tags', path: [i], priorSize: prior });
const setName = (v: string): Instruction => ({ type: 'Update', table: 'Item', object: obj, field: 'name', path: [], value: { type: 'string', value: v }, isDefault: false, priorSize: 0 });
type Sc = { e: Instruction[]; c1: Instruction[]; c2: Instruction[]; te: bigint; t1: bigint; t2: bigint };
function run(sc: Sc, forget: boolean) {
  const server = new SimServer(); const a = new SimClient(1n); const b = new SimClient(2n);
  a.write([...schema, { type: 'CreateObject', table: 'Item', object: obj }, ins(0, 'x', 0)], 1n);
  a.uploadOne(server); while (a.pendingDownloads(server)) a.downloadOne(server);
  b.write(schema, 1n); b.uploadOne(server); while (b.pendingDownloads(server)) b.downloadOne(server);
  while (a.pendingDownloads(server)) a.downloadOne(server);
  b.write(sc.e, sc.te); b.uploadOne(server);
  a.write(sc.c1, sc.t1); a.write(sc.c2, sc.t2);
  a.uploadOne(server);
  if (forget) (server as any).reciprocal.clear();
  a.uploadOne(server);
  for (const c of [a, b]) while (c.pendingDownloads(server)) c.downloadOne(server);
  return dumps(server, [a, b]);
}
const scenarios: Record<string, Sc> = {
  insert: { e: [ins(0, 'b', 1)], c1: [ins(0, 'a1', 1)], c2: [ins(1, 'a2', 2)], te: 5n, t1: 3n, t2: 4n },
  insert2: { e: [ins(0, 'b', 1)], c1: [ins(0, 'a1', 1)], c2: [ins(1, 'a2', 2)], te: 2n, t1: 3n, t2: 4n },
  eraseSet: { e: [erase(0, 1)], c1: [ins(1, 'a1', 1)], c2: [erase(0, 2)], te: 2n, t1: 3n, t2: 4n },
  setname: { e: [setName('b')], c1: [setName('a1')], c2: [setName('a2')], te: 5n, t1: 3n, t2: 4n },
};
for (const [name, sc] of Object.entries(scenarios)) for (const forget of [false, true]) { try { const d = run(sc, forget); console.log(name, forget ? 'forgot' : 'kept  ', JSON.stringify(d.server) === JSON.stringify(d.clients[0]) && JSON.stringify(d.server) === JSON.stringify(d.clients[1]) ? 'converged' : 'DIVERGED', JSON.stringify(d).replace(/"65e0+1"/g, 'I').slice(0, 300)); } catch (e) { console.log(name, forget, 'ERROR', (e as Error).message); } }
