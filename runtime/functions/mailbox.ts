// A worker's mailbox: shared memory where the worker leaves the messages it has not sent yet (finished
// calls' outcomes above all) before it runs function code again, so that they need not each leave at once
// on its socket (a frame each, a read each for the runtime's main thread), yet never wait behind a loop:
// when the pool finds the worker stuck, the agent takes them from here and sends them on (agent.ts). The
// worker sends them itself with its next batch unless the agent took them first; one compare-and-exchange
// on the state decides, so each message leaves once. Layout: the state and the length (two int32s), then
// chunks, each a length (uint32, little-endian) and a batch in V8's serialization.
import v8 from 'node:v8';

/** Room for the messages of one run of a worker's inbox; a batch that does not fit leaves on the socket at once. */
export const MAILBOX_BYTES = 1024 * 1024;
const HEADER_BYTES = 8;
const STATE = 0;
const LENGTH = 1;
const EMPTY = 0;
const WRITING = 1;
const PENDING = 2;
const READING = 3;
const TAKEN = 4;

export interface Mailbox {
  header: Int32Array;
  bytes: Uint8Array;
  view: DataView;
}

export function createMailbox(): SharedArrayBuffer {
  return new SharedArrayBuffer(HEADER_BYTES + MAILBOX_BYTES);
}

export function mailboxOf(shared: SharedArrayBuffer): Mailbox {
  const bytes = new Uint8Array(shared, HEADER_BYTES);
  return { header: new Int32Array(shared, 0, 2), bytes, view: new DataView(shared, HEADER_BYTES) };
}

/** The agent reads for a moment: the worker waits for it. */
function waitWhileRead(mailbox: Mailbox): void {
  Atomics.wait(mailbox.header, STATE, READING, 5);
}

/**
 * The worker leaves `batch` in the mailbox. `taken`: the agent had taken (and sent) what the worker left
 * before. False when the batch does not fit: the worker then sends everything on its socket.
 */
export function deposit(mailbox: Mailbox, batch: unknown[]): { stored: boolean; taken: boolean } {
  for (;;) {
    const state = Atomics.load(mailbox.header, STATE);
    if (state === READING) {
      waitWhileRead(mailbox);
      continue;
    }
    if (Atomics.compareExchange(mailbox.header, STATE, state, WRITING) !== state) continue;
    const kept = state === PENDING ? Atomics.load(mailbox.header, LENGTH) : 0;
    const taken = state === TAKEN;
    const chunk = v8.serialize(batch);
    if (kept + 4 + chunk.length > mailbox.bytes.length) {
      Atomics.store(mailbox.header, STATE, kept > 0 ? PENDING : EMPTY);
      return { stored: false, taken };
    }
    mailbox.view.setUint32(kept, chunk.length, true);
    mailbox.bytes.set(chunk, kept + 4);
    Atomics.store(mailbox.header, LENGTH, kept + 4 + chunk.length);
    Atomics.store(mailbox.header, STATE, PENDING);
    return { stored: true, taken };
  }
}

/** The worker is sending its messages: whether those it left in the mailbox are still its to send (false: the agent sent them). */
export function reclaim(mailbox: Mailbox): boolean {
  for (;;) {
    const state = Atomics.load(mailbox.header, STATE);
    if (state === READING) {
      waitWhileRead(mailbox);
      continue;
    }
    if (state === TAKEN) {
      Atomics.store(mailbox.header, STATE, EMPTY);
      return false;
    }
    if (state !== PENDING || Atomics.compareExchange(mailbox.header, STATE, PENDING, EMPTY) === PENDING) return true;
  }
}

/** The agent takes what a stuck worker left (the worker then does not send it again). */
export function take(mailbox: Mailbox): unknown[] {
  if (Atomics.compareExchange(mailbox.header, STATE, PENDING, READING) !== PENDING) return [];
  const messages: unknown[] = [];
  try {
    const length = Atomics.load(mailbox.header, LENGTH);
    for (let at = 0; at + 4 <= length;) {
      const size = mailbox.view.getUint32(at, true);
      const batch: unknown = v8.deserialize(Buffer.from(mailbox.bytes.slice(at + 4, at + 4 + size)));
      if (Array.isArray(batch)) messages.push(...(batch as unknown[]));
      at += 4 + size;
    }
  } catch {
    // What the worker's code wrote there is the runtime's to check; what does not read is dropped.
  }
  Atomics.store(mailbox.header, STATE, TAKEN);
  Atomics.notify(mailbox.header, STATE);
  return messages;
}
