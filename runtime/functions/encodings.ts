// The BSON of documents that never change (a store's own, see DocumentStore.storedOriginals), kept by
// their identity on the main thread: documents functions read again cross to a worker without being
// encoded again, and encoding them is most of what a function's data request costs this thread.
import { encodeDocument, type Encoded } from './protocol';

/** BSON kept at most, in bytes; the documents kept longest go first. */
const BUDGET_BYTES = 16 * 1024 * 1024;
/** Larger documents are encoded each time: one of them would push out many small ones. */
const MAX_KEPT_BYTES = 64 * 1024;

export class OriginalEncodings {
  private readonly kept = new Map<object, Encoded>();
  private bytes = 0;

  constructor(private readonly budgetBytes = BUDGET_BYTES) {}

  /** The BSON of `original`, which the caller vouches never changes. */
  encode(original: Record<string, unknown>): Encoded {
    const known = this.kept.get(original);
    if (known !== undefined) return known;
    const encoded = encodeDocument(original);
    if (encoded.length <= MAX_KEPT_BYTES) {
      this.kept.set(original, encoded);
      this.bytes += encoded.length;
      for (const [doc, oldest] of this.kept) {
        if (this.bytes <= this.budgetBytes) break;
        this.kept.delete(doc);
        this.bytes -= oldest.length;
      }
    }
    return encoded;
  }

  get keptBytes(): number {
    return this.bytes;
  }
}
