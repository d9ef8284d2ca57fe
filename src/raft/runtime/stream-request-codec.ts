// The peer stream's request encoder. The generated one grows its writer by doubling and then
// copies the result out: a leader's batch carrying megabytes of effects (~800 bytes per herd run
// for each follower) was copied about three times into freshly faulted pages before grpc-js
// framed it. Effects are opaque bytes, so they are appended after the rest of the request —
// encoded by the generated code — into one buffer of the exact size. Protobuf readers accept
// fields in any order and keep repeated fields in the order they come, so the decoded request is
// the same.
import { StreamRequest } from '../../gen/herald/raft/v1/raft.js';

const EFFECTS_TAG = (3 << 3) | 2; // field 3, length-delimited

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    len++;
  }
  return len;
}

function writeVarint(out: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    out[pos++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[pos++] = n;
  return pos;
}

export function encodeStreamRequest(req: StreamRequest): Buffer {
  if (req.effects.length === 0) {
    const b = StreamRequest.encode(req).finish();
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  }
  const head = StreamRequest.encode({ ...req, effects: [] }).finish();
  let size = head.length;
  for (const fx of req.effects) size += 1 + varintLength(fx.length) + fx.length;
  const out = Buffer.allocUnsafe(size);
  out.set(head, 0);
  let pos = head.length;
  for (const fx of req.effects) {
    out[pos++] = EFFECTS_TAG;
    pos = writeVarint(out, pos, fx.length);
    out.set(fx, pos);
    pos += fx.length;
  }
  return out;
}
