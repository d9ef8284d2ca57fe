// The state machine's LevelDB batch, filled without abstract-level's per-operation wrapper.
//
// abstract-chained-batch's put/del check the batch's status, read options, validate the key and
// value, build an operation object ({ ...options, type, key, value, keyEncoding, valueEncoding })
// and look both encodings up, for every operation, before handing key and value to the native
// batch. A herd writes ~11 operations per run on every replica (fsm-apply), and that wrapper
// allocated 250–480 bytes per command item. With this store's encodings (utf8 keys, view
// values: formats classic-level takes natively) the encodings are the identity, so the
// operations go straight to classic-level's `_put`/`_del`, which take encoded keys and values.
// write() and close() stay abstract-level's, so the batch's lifecycle (status, the db's open
// resources) is unchanged.
import type { Db } from './apply-txn.js';
import type { BatchSink } from './index-key-writes.js';

type Chained = ReturnType<Db['batch']>;

interface NativeOps {
  _put(key: string | Uint8Array, value: Uint8Array): void;
  _del(key: string | Uint8Array): void;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function asString(key: string | Uint8Array): string {
  return typeof key === 'string' ? key : utf8.decode(key);
}

export class DirectBatch implements BatchSink {
  private readonly batch: Chained;
  private readonly native: NativeOps | undefined;
  /** Operations given to the native batch directly (abstract-level's length does not count them). */
  private direct = 0;
  private lastKey: string | Uint8Array = '';
  private lastValue: Uint8Array | null = null;

  /** `keys` is told every key written or deleted (written-keys.ts). */
  constructor(
    db: Db,
    private readonly keys?: { written(key: string | Uint8Array, deleted: boolean): void },
  ) {
    this.batch = db.batch();
    const b = this.batch as unknown as Partial<NativeOps>;
    // Only where the encodings are the identity and the private methods are there; otherwise
    // every operation takes the public path.
    const identity = db.keyEncoding().format === 'utf8' && db.valueEncoding().format === 'view';
    this.native = identity && typeof b._put === 'function' && typeof b._del === 'function' ? (b as NativeOps) : undefined;
  }

  put(key: string, value: Uint8Array): void {
    this.putAny(key, value);
  }

  del(key: string): void {
    this.delAny(key);
  }

  /**
   * A put of a key given as its UTF-8 bytes (what the store's utf8 keys are on disk): the native
   * batch takes the bytes as they are, without a string made only to be encoded again. Throws
   * a TypeError for bytes that are not UTF-8 when the public path has to decode them.
   */
  putKeyBytes(key: Uint8Array, value: Uint8Array): void {
    this.putAny(key, value);
  }

  delKeyBytes(key: Uint8Array): void {
    this.delAny(key);
  }

  private putAny(key: string | Uint8Array, value: Uint8Array): void {
    this.keys?.written(key, false);
    if (this.native === undefined) this.batch.put(asString(key), value);
    else {
      this.native._put(key, value);
      this.noteDirect(key, value);
    }
  }

  private delAny(key: string | Uint8Array): void {
    this.keys?.written(key, true);
    if (this.native === undefined) this.batch.del(asString(key));
    else {
      this.native._del(key);
      this.noteDirect(key, null);
    }
  }

  private noteDirect(key: string | Uint8Array, value: Uint8Array | null): void {
    this.direct++;
    this.lastKey = key;
    this.lastValue = value;
  }

  /** A put through the public path (counted by abstract-level). */
  putPublic(key: string, value: Uint8Array): void {
    this.keys?.written(key, false);
    this.batch.put(key, value);
  }

  async write(options: { sync?: boolean } = {}): Promise<void> {
    // abstract-level skips the native write of a batch it counts as empty: repeating the last
    // operation publicly makes it count one, and leaves the same store (same key, same value).
    if (this.direct > 0 && this.batch.length === 0) {
      const key = asString(this.lastKey);
      if (this.lastValue === null) this.batch.del(key);
      else this.batch.put(key, this.lastValue);
    }
    await this.batch.write(options);
  }

  close(): Promise<void> {
    return this.batch.close();
  }
}
