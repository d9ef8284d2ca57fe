// The peer stream's request codec, for the bytes that dominate it: a leader's batch carries
// megabytes of effects (~800 bytes per herd run for each follower).
// - Encoding: the generated encoder grows its writer by doubling and then copies the result out,
//   about three copies into freshly faulted pages before grpc-js framed it. Effects are opaque
//   bytes, so they are appended after the rest of the request (encoded by the generated code)
//   into one buffer of the exact size. Protobuf readers accept fields in any order and keep
//   repeated fields in the order they come, so the decoded request is the same.
// - Decoding: the generated decoder copies every bytes field out of the message. Effects are
//   read as views of it instead: the follower writes them within an apply window or drops them,
//   so the message they keep alive is short-lived and bounded like the effects themselves.
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { RaftMessage, RaftServiceService, StreamRequest } from '../../gen/herald/raft/v1/raft.js';
import { UninitializedWriter } from '../../uninitialized-bytes.js';

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
    const b = StreamRequest.encode(req, new UninitializedWriter()).finish();
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  }
  const head = StreamRequest.encode({ ...req, effects: [] }, new UninitializedWriter()).finish();
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

export function decodeStreamRequest(input: Buffer): StreamRequest {
  const reader = new BinaryReader(input);
  const req: StreamRequest = { clusterId: '', messages: [], effects: [], effectsFrom: '', senderIncarnation: '', targetIncarnation: '', featureLevel: 0 };
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    switch (tag) {
      case (1 << 3) | 2:
        req.clusterId = reader.string();
        continue;
      case (2 << 3) | 2:
        req.messages.push(RaftMessage.decode(reader, reader.uint32()));
        continue;
      case EFFECTS_TAG: {
        const b = reader.bytes();
        req.effects.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
        continue;
      }
      case (4 << 3) | 2:
        req.effectsFrom = reader.string();
        continue;
      case (5 << 3) | 2:
        req.senderIncarnation = reader.string();
        continue;
      case (6 << 3) | 2:
        req.targetIncarnation = reader.string();
        continue;
      case 7 << 3: // field 7, varint
        req.featureLevel = reader.uint32();
        continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    reader.skip(tag & 7);
  }
  return req;
}

/** RaftService with the peer stream's requests going through this codec (client and server). */
export const PEER_RAFT_SERVICE: typeof RaftServiceService = {
  ...RaftServiceService,
  stream: { ...RaftServiceService.stream, requestSerialize: encodeStreamRequest, requestDeserialize: decodeStreamRequest },
};
