// The effects of one apply call as bytes the leader sends its followers: every LevelDB write of its batch,
// the ready-index changes and the per-state run counts it left. A replica that holds them can
// write them instead of evaluating the same commands again. Apply is deterministic (I5), so the
// bytes are exactly what its own evaluation would have written; only the CPU differs (writing is
// several times cheaper than evaluating: bench/README.md).
//
// An effects record names the applied index it starts from and the one it ends at: it fits only
// a store that has applied exactly `fromApplied` (the caller evaluates otherwise).
import { isUtf8 } from 'node:buffer';
import { ByteReader, ByteWriter, FsmDecodeError, type WriteBuffers } from '../commands/binary-codec.js';
import type { BatchSink } from '../store/index-key-writes.js';
import type { ReadyEntry } from '../store/ready-index.js';

export const APPLY_EFFECTS_FORMAT_VERSION = 1;

const OP_DEL = 0;
const OP_PUT = 1;

export interface ReadyChange {
  readonly before: ReadyEntry | undefined;
  readonly after: ReadyEntry | undefined;
}

/** A decoded effects record; `ops` are in batch order (a put or delete of one key each). */
export interface ApplyEffects {
  readonly fromApplied: number;
  readonly toApplied: number;
  readonly ops: readonly { readonly key: string; readonly value: Uint8Array | null }[];
  readonly ready: readonly ReadyChange[];
  /** Each state's run count after the batch, for the states it changed. */
  readonly counts: readonly (readonly [number, number])[];
}

/**
 * A batch sink that passes every write on to the real batch and remembers it. The values are
 * kept by reference (the transaction never changes bytes it has written) and encoded once, in
 * finish(): encoding as they come would take the machine's ByteWriter scratch away from the
 * record encodes running in between.
 */
export class EffectsRecorder implements BatchSink {
  private readonly keys: string[] = [];
  private readonly values: (Uint8Array | null)[] = [];

  constructor(
    private readonly batch: BatchSink,
    private readonly buffers?: WriteBuffers,
  ) {}

  /** Writes recorded so far. */
  get size(): number {
    return this.keys.length;
  }

  put(key: string, value: Uint8Array): void {
    this.batch.put(key, value);
    this.keys.push(key);
    this.values.push(value);
  }

  del(key: string): void {
    this.batch.del(key);
    this.keys.push(key);
    this.values.push(null);
  }

  finish(fromApplied: number, toApplied: number, ready: readonly ReadyChange[], counts: ReadonlyMap<number, number>): Uint8Array {
    const { keys, values } = this;
    // One writer sized for the worst case (three UTF-8 bytes per key character), one exact copy
    // out: a herd's fire batch makes megabytes of effects, and every extra buffer of that size
    // is a copy into freshly faulted pages.
    let size = 64 + ready.length * 96 + counts.size * 20;
    for (let i = 0; i < keys.length; i++) size += 1 + 5 + keys[i]!.length * 3 + (values[i] ? 5 + values[i]!.length : 0);
    const out = new ByteWriter(size, this.buffers).u8(APPLY_EFFECTS_FORMAT_VERSION).uint(fromApplied).uint(toApplied).uint(keys.length);
    // The ops go in as one length-prefixed block, so the reader can take them without a copy;
    // the prefix is filled in once the block is written.
    const prefixAt = out.reserveUint();
    const start = out.length;
    for (let i = 0; i < keys.length; i++) {
      const v = values[i]!;
      if (v === null) out.u8(OP_DEL).str(keys[i]!);
      else out.u8(OP_PUT).str(keys[i]!).bytes(v);
    }
    out.patchUint(prefixAt, out.length - start);
    out.uint(ready.length);
    for (const c of ready) {
      writeReadyEntry(out, c.before);
      writeReadyEntry(out, c.after);
    }
    const states = [...counts].sort((a, b) => a[0] - b[0]);
    out.uint(states.length);
    for (const [state, n] of states) out.uint(state).uint(n);
    return out.finish(true);
  }
}

function writeReadyEntry(w: ByteWriter, e: ReadyEntry | undefined): void {
  if (!e) {
    w.bool(false);
    return;
  }
  w.bool(true).str(e.runId).str(e.jobId).str(e.taskType).int(e.priority).uint(e.notBeforeMs);
}

function readReadyEntry(r: ByteReader): ReadyEntry | undefined {
  if (!r.bool()) return undefined;
  return { runId: r.str(), jobId: r.str(), taskType: r.str(), priority: r.int(), notBeforeMs: r.uint() };
}

/** Reads the version and the applied range. */
function readHeader(r: ByteReader): { fromApplied: number; toApplied: number } {
  const version = r.u8();
  if (version !== APPLY_EFFECTS_FORMAT_VERSION) throw new FsmDecodeError(`unknown apply effects format ${version}`);
  const fromApplied = r.uint();
  const toApplied = r.uint();
  if (toApplied <= fromApplied) throw new FsmDecodeError(`apply effects end at ${toApplied}, not after their start ${fromApplied}`);
  return { fromApplied, toApplied };
}

/** Just the applied range, without decoding the rest (to decide whether the record fits). */
export function readEffectsRange(bytes: Uint8Array): { fromApplied: number; toApplied: number } {
  return readHeader(new ByteReader(bytes));
}

/**
 * The whole record. The writes go to `write` as they are read, keys as their UTF-8 bytes and
 * values, both views into `bytes` (a LevelDB batch copies what it is given, and no key becomes a
 * string only to be encoded again); the rest is returned. Throws FsmDecodeError on anything
 * malformed, possibly after some writes were handed over: the caller writes into a batch it
 * discards then.
 */
export function readApplyEffects(bytes: Uint8Array, write: (key: Uint8Array, value: Uint8Array | null) => void): Omit<ApplyEffects, 'ops'> & { readonly opCount: number } {
  const r = new ByteReader(bytes);
  const { fromApplied, toApplied } = readHeader(r);
  const n = r.uint();
  const block = new ByteReader(r.bytesView());
  for (let i = 0; i < n; i++) {
    const op = block.u8();
    if (op !== OP_PUT && op !== OP_DEL) throw new FsmDecodeError(`unknown apply effects op ${op}`);
    const key = block.bytesView();
    // Keys are the store's utf8 keys: bytes that are not UTF-8 could never have come from one.
    if (key.length === 0 || !isUtf8(key)) throw new FsmDecodeError('apply effects write an empty or non-UTF-8 key');
    write(key, op === OP_PUT ? block.bytesView() : null);
  }
  block.end();
  const ready: ReadyChange[] = new Array(r.uint());
  for (let i = 0; i < ready.length; i++) ready[i] = { before: readReadyEntry(r), after: readReadyEntry(r) };
  const counts: [number, number][] = new Array(r.uint());
  for (let i = 0; i < counts.length; i++) counts[i] = [r.uint(), r.uint()];
  r.end();
  return { fromApplied, toApplied, opCount: n, ready, counts };
}

/** The whole record with its writes as a list (tests, tools). */
export function decodeApplyEffects(bytes: Uint8Array): ApplyEffects {
  const ops: { key: string; value: Uint8Array | null }[] = [];
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const rest = readApplyEffects(bytes, (key, value) => ops.push({ key: utf8.decode(key), value: value === null ? null : value.slice() }));
  return { fromApplied: rest.fromApplied, toApplied: rest.toApplied, ops, ready: rest.ready, counts: rest.counts };
}
