// The scheduler snapshot's byte format, read as a stream: a header (format version byte, varint
// applied index) followed by records (varint-length key, varint-length value). The transport
// and the snapshot file re-chunk the bytes freely, so records are reassembled across chunk
// boundaries here; the writer's chunking carries no meaning.
import { HeraldError } from '../../herald-error.js';

export type SnapshotPart = { kind: 'header'; version: number; appliedIndex: number } | { kind: 'record'; key: Uint8Array; value: Uint8Array };

/** Reads a varint at pos; undefined when the buffer ends first. */
function varint(buf: Uint8Array, pos: number): { value: number; pos: number } | undefined {
  let value = 0;
  let mul = 1;
  for (let i = 0; i < 8; i++) {
    if (pos >= buf.length) return undefined;
    const b = buf[pos++]!;
    value += (b & 0x7f) * mul;
    if ((b & 0x80) === 0) {
      if (!Number.isSafeInteger(value)) throw new HeraldError('CORRUPT_STORAGE', 'snapshot varint out of range');
      return { value, pos };
    }
    mul *= 0x80;
  }
  throw new HeraldError('CORRUPT_STORAGE', 'snapshot varint too long');
}

function lengthPrefixed(buf: Uint8Array, pos: number): { bytes: Uint8Array; pos: number } | undefined {
  const n = varint(buf, pos);
  if (!n || n.pos + n.value > buf.length) return undefined;
  // A view: every record is copied where it goes (a store batch) before the next chunk is read.
  return { bytes: buf.subarray(n.pos, n.pos + n.value), pos: n.pos + n.value };
}

/**
 * The parts of a snapshot stream, one array per chunk read: the records whole in it (and the
 * header first). Tens of millions of records go through a restore, so they come out in the
 * chunk's batch rather than one await each. Records are views into the stream's bytes: the
 * caller copies what it keeps before asking for the next batch.
 */
export async function* readSnapshotStream(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<SnapshotPart[]> {
  let buf: Uint8Array = new Uint8Array(0);
  let headerRead = false;
  for await (const chunk of chunks) {
    if (buf.length === 0) buf = chunk;
    else {
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf, 0);
      joined.set(chunk, buf.length);
      buf = joined;
    }
    const parts: SnapshotPart[] = [];
    let pos = 0;
    if (!headerRead) {
      if (buf.length < 1) continue;
      const idx = varint(buf, 1);
      if (!idx) continue;
      parts.push({ kind: 'header', version: buf[0]!, appliedIndex: idx.value });
      headerRead = true;
      pos = idx.pos;
    }
    for (;;) {
      const key = lengthPrefixed(buf, pos);
      if (!key) break;
      const value = lengthPrefixed(buf, key.pos);
      if (!value) break;
      parts.push({ kind: 'record', key: key.bytes, value: value.bytes });
      pos = value.pos;
    }
    if (parts.length > 0) yield parts;
    // The rest is copied on the next join (or kept as a view of this chunk alone, which nothing
    // references once its records are written).
    buf = buf.subarray(pos);
  }
  if (!headerRead) throw new HeraldError('CORRUPT_STORAGE', 'empty snapshot stream');
  if (buf.length > 0) throw new HeraldError('CORRUPT_STORAGE', `snapshot stream ends inside a record (${buf.length} bytes left over)`);
}
