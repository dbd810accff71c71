// Instruction builders and a small schema for the merge's tests: Task (int primary key) with scalar
// fields, a list of strings, a set, a dictionary, a list of embedded Items and a link to a Person.
import type { Instruction, Payload, PathElement, PrimaryKey } from '../../runtime/sync/wire/instructions';

export const pk = (n: number): PrimaryKey => ({ type: 'int', value: BigInt(n) });
export const str = (value: string): Payload => ({ type: 'string', value });
export const int = (n: number | bigint): Payload => ({ type: 'int', value: BigInt(n) });
export const link = (table: string, n: number): Payload => ({ type: 'link', table, target: pk(n) });

export const SCHEMA: Instruction[] = [
  { type: 'AddTable', table: 'Item', spec: { kind: 'embedded' } },
  { type: 'AddColumn', table: 'Item', field: 'text', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' },
  { type: 'AddColumn', table: 'Item', field: 'qty', valueType: 'int', keyType: 'null', nullable: false, collectionType: 'single' },
  { type: 'AddTable', table: 'Person', spec: { kind: 'topLevel', pkField: '_id', pkType: 'int', pkNullable: false, asymmetric: false } },
  { type: 'AddColumn', table: 'Person', field: 'name', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' },
  { type: 'AddTable', table: 'Task', spec: { kind: 'topLevel', pkField: '_id', pkType: 'int', pkNullable: false, asymmetric: false } },
  { type: 'AddColumn', table: 'Task', field: 'name', valueType: 'string', keyType: 'null', nullable: true, collectionType: 'single' },
  { type: 'AddColumn', table: 'Task', field: 'count', valueType: 'int', keyType: 'null', nullable: false, collectionType: 'single' },
  { type: 'AddColumn', table: 'Task', field: 'tags', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'list' },
  { type: 'AddColumn', table: 'Task', field: 'labels', valueType: 'string', keyType: 'null', nullable: false, collectionType: 'set' },
  { type: 'AddColumn', table: 'Task', field: 'attrs', valueType: 'string', keyType: 'string', nullable: true, collectionType: 'dictionary' },
  { type: 'AddColumn', table: 'Task', field: 'items', valueType: 'link', keyType: 'null', nullable: false, collectionType: 'list', linkTargetTable: 'Item' },
  { type: 'AddColumn', table: 'Task', field: 'owner', valueType: 'link', keyType: 'null', nullable: true, collectionType: 'single', linkTargetTable: 'Person' },
];

export const create = (n: number, table = 'Task'): Instruction => ({ type: 'CreateObject', table, object: pk(n) });
export const erase = (n: number, table = 'Task'): Instruction => ({ type: 'EraseObject', table, object: pk(n) });

export function set(n: number, field: string, value: Payload, path: PathElement[] = [], priorSize = 0, table = 'Task'): Instruction {
  return { type: 'Update', table, object: pk(n), field, path, value, isDefault: false, priorSize };
}
export function add(n: number, field: string, value: number): Instruction {
  return { type: 'AddInteger', table: 'Task', object: pk(n), field, path: [], value: BigInt(value) };
}
export function insert(n: number, field: string, path: PathElement[], value: Payload, priorSize: number): Instruction {
  return { type: 'ArrayInsert', table: 'Task', object: pk(n), field, path, value, priorSize };
}
export function remove(n: number, field: string, path: PathElement[], priorSize: number): Instruction {
  return { type: 'ArrayErase', table: 'Task', object: pk(n), field, path, priorSize };
}
export function move(n: number, field: string, path: PathElement[], ndx2: number, priorSize: number): Instruction {
  return { type: 'ArrayMove', table: 'Task', object: pk(n), field, path, ndx2, priorSize };
}
export function clear(n: number, field: string, collectionType: 'list' | 'set' | 'dictionary'): Instruction {
  return { type: 'Clear', table: 'Task', object: pk(n), field, path: [], collectionType };
}
export function setInsert(n: number, value: string): Instruction {
  return { type: 'SetInsert', table: 'Task', object: pk(n), field: 'labels', path: [], value: str(value) };
}
export function setErase(n: number, value: string): Instruction {
  return { type: 'SetErase', table: 'Task', object: pk(n), field: 'labels', path: [], value: str(value) };
}
