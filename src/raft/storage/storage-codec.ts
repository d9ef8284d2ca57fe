// Binary layout of the Raft log database (LevelDB under <data-dir>/raft).
//
// Keys:   "e/" + 8-byte big-endian index  -> entry record   (ordered, so a range is a log slice)
//         "m/hard"                        -> hard state     (term, vote, commit in one key)
//         "m/snap"                        -> snapshot point (index, term, conf)
//         "m/base"                        -> compaction point (index, term)
//         "m/cluster"                     -> cluster identity
// Every value starts with a CRC32 of the rest, so a torn or flipped record is detected on load.

import { HeraldError } from '../../herald-error.js';
import type { Entry, EntryType } from '../types.js';
import { checksum } from './checksum.js';

export const ENTRY_PREFIX = Buffer.from('e/');
export const KEY_HARD = Buffer.from('m/hard');
export const KEY_SNAP = Buffer.from('m/snap');
export const KEY_BASE = Buffer.from('m/base');
export const KEY_CLUSTER = Buffer.from('m/cluster');

export function entryKey(index: number): Buffer {
  const k = Buffer.allocUnsafe(10);
  ENTRY_PREFIX.copy(k, 0);
  // Indexes stay below 2^53: split into two 32-bit halves for a sortable big-endian key.
  k.writeUInt32BE(Math.floor(index / 0x1_0000_0000), 2);
  k.writeUInt32BE(index >>> 0, 6);
  return k;
}

export function indexOfEntryKey(k: Uint8Array): number {
  const b = Buffer.from(k.buffer, k.byteOffset, k.byteLength);
  if (b.length !== 10 || b[0] !== ENTRY_PREFIX[0] || b[1] !== ENTRY_PREFIX[1]) return -1;
  return b.readUInt32BE(2) * 0x1_0000_0000 + b.readUInt32BE(6);
}

/** Upper bound of the entry key range (exclusive). */
export const ENTRY_KEY_END = Buffer.from('e0');

const TYPE_CODE: Record<EntryType, number> = { normal: 1, config: 2 };
const HEADER = 4 + 1 + 8 + 8;

/** [crc32][type u8][term f64][index f64][data] */
export function encodeEntry(e: Entry): Buffer {
  const b = Buffer.allocUnsafe(HEADER + e.data.length);
  b.writeUInt8(TYPE_CODE[e.type], 4);
  b.writeDoubleBE(e.term, 5);
  b.writeDoubleBE(e.index, 13);
  b.set(e.data, HEADER);
  b.writeUInt32BE(checksum(b.subarray(4)), 0);
  return b;
}

export function decodeEntry(b: Uint8Array, where: string): Entry {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (buf.length < HEADER) throw corrupt(`${where}: entry record truncated (${buf.length} bytes)`);
  if (buf.readUInt32BE(0) !== checksum(buf.subarray(4))) throw corrupt(`${where}: entry checksum mismatch`);
  const code = buf.readUInt8(4);
  const type: EntryType | undefined = code === 1 ? 'normal' : code === 2 ? 'config' : undefined;
  if (!type) throw corrupt(`${where}: unknown entry type ${code}`);
  return {
    type,
    term: buf.readDoubleBE(5),
    index: buf.readDoubleBE(13),
    // Copy: LevelDB buffers may be views into a larger slab the iterator reuses.
    data: Uint8Array.prototype.slice.call(buf, HEADER),
  };
}

/** [crc32][utf8 JSON] for the small metadata records. */
export function encodeRecord(value: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(value), 'utf8');
  const b = Buffer.allocUnsafe(4 + json.length);
  json.copy(b, 4);
  b.writeUInt32BE(checksum(json), 0);
  return b;
}

export function decodeRecord<T>(b: Uint8Array, where: string): T {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (buf.length < 4 || buf.readUInt32BE(0) !== checksum(buf.subarray(4))) {
    throw corrupt(`${where}: record checksum mismatch`);
  }
  try {
    return JSON.parse(buf.subarray(4).toString('utf8')) as T;
  } catch {
    throw corrupt(`${where}: record is not valid JSON`);
  }
}

export function corrupt(message: string): HeraldError {
  return new HeraldError('CORRUPT_STORAGE', `corrupt Raft storage: ${message}`);
}
