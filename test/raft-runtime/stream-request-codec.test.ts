import { describe, expect, it } from 'vitest';
import { StreamRequest } from '../../src/gen/herald/raft/v1/raft.js';
import { messageToPb } from '../../src/server/peer/message-codec.js';
import { decodeStreamRequest, encodeStreamRequest } from '../../src/server/peer/stream-request-codec.js';

const bytes = (n: number, seed: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

describe('the peer stream request encoder', () => {
  const append = messageToPb(
    {
      type: 'app',
      from: 'n1',
      to: 'n2',
      term: 7,
      logTerm: 6,
      index: 41,
      commit: 40,
      reject: false,
      rejectHint: 0,
      rejectHintTerm: 0,
      entries: [
        { term: 7, index: 42, type: 'normal', data: bytes(300, 1) },
        { term: 7, index: 43, type: 'normal', data: bytes(5, 2) },
      ],
    },
    1_700_000_000_000,
  );

  it('decodes to the request it was given, effects in order, whatever their sizes', () => {
    // Lengths around the varint boundaries of the length prefix (1, 2 and 3 bytes).
    const effects = [0, 1, 127, 128, 16_383, 16_384, 300_000].map((n, i) => bytes(n, i));
    const req: StreamRequest = { clusterId: 'c-1', messages: [append], effects, effectsFrom: 'n1', senderIncarnation: 'a1', targetIncarnation: 'b2', featureLevel: 0 };
    const decoded = StreamRequest.decode(encodeStreamRequest(req));
    expect(decoded.clusterId).toBe('c-1');
    expect(decoded.effectsFrom).toBe('n1');
    expect(decoded.messages).toEqual(req.messages);
    expect(decoded.effects.map((e) => e.length)).toEqual(effects.map((e) => e.length));
    decoded.effects.forEach((e, i) => expect(Buffer.compare(e, effects[i]!)).toBe(0));
  });

  it('is the generated encoding when there are no effects', () => {
    const req: StreamRequest = { clusterId: 'c-1', messages: [append], effects: [], effectsFrom: '', senderIncarnation: '', targetIncarnation: '', featureLevel: 0 };
    expect(Buffer.compare(encodeStreamRequest(req), Buffer.from(StreamRequest.encode(req).finish()))).toBe(0);
  });

  it('has the generated encoding’s length with effects (the same fields, reordered)', () => {
    const req: StreamRequest = { clusterId: 'c-1', messages: [append], effects: [bytes(1000, 3), bytes(200, 4)], effectsFrom: 'n1', senderIncarnation: 'a1', targetIncarnation: 'b2', featureLevel: 0 };
    expect(encodeStreamRequest(req).length).toBe(StreamRequest.encode(req).finish().length);
  });

  it('decodes what either encoder wrote to what the generated decoder reads, effects as views of the input', () => {
    const req: StreamRequest = { clusterId: 'c-1', messages: [append, append], effects: [bytes(70_000, 5), bytes(0, 6), bytes(3, 7)], effectsFrom: 'n3', senderIncarnation: 'i-3', targetIncarnation: 'i-1', featureLevel: 0 };
    for (const wire of [encodeStreamRequest(req), Buffer.from(StreamRequest.encode(req).finish())]) {
      const ours = decodeStreamRequest(wire);
      expect(ours).toEqual(StreamRequest.decode(wire));
      // No copy: each record is a window on the received message.
      for (const fx of ours.effects) expect(fx.buffer).toBe(wire.buffer);
    }
  });

  it('skips fields it does not know (a newer sender), like the generated decoder', () => {
    const known = Buffer.from(StreamRequest.encode({ clusterId: 'c-9', messages: [], effects: [bytes(4, 1)], effectsFrom: 'n1', senderIncarnation: 'a1', targetIncarnation: 'b2', featureLevel: 0 }).finish());
    // Field 15 as a varint (tag 120) and field 16 as bytes (tag 130 1), before the known fields.
    const wire = Buffer.concat([Buffer.from([120, 0x96, 0x01, 130, 1, 2, 0xaa, 0xbb]), known]);
    expect(decodeStreamRequest(wire)).toEqual(StreamRequest.decode(wire));
    expect(decodeStreamRequest(wire).clusterId).toBe('c-9');
  });
});
