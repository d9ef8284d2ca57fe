import { describe, expect, it } from 'vitest';
import { coalesceMessages } from '../../src/server/peer/message-coalescer.js';
import type { Entry, Message } from '../../src/raft/types.js';

const ent = (index: number, term = 2): Entry => ({ index, term, type: 'normal', data: Buffer.from([index]) });
function msg(p: Partial<Message>): Message {
  return { type: 'app', from: 'n1', to: 'n2', term: 2, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0, rejectHintTerm: 0, ...p };
}

describe('coalesceMessages', () => {
  it('merges contiguous appends to one peer into one append with the last commit index', () => {
    const out = coalesceMessages([
      msg({ index: 10, logTerm: 2, entries: [ent(11)], commit: 9 }),
      msg({ index: 11, logTerm: 2, entries: [ent(12), ent(13)], commit: 10 }),
      msg({ index: 13, logTerm: 2, entries: [ent(14)], commit: 10 }),
    ]);
    expect(out).toHaveLength(1);
    expect(out[0]!.index).toBe(10);
    expect(out[0]!.logTerm).toBe(2);
    expect(out[0]!.entries.map((e) => e.index)).toEqual([11, 12, 13, 14]);
    expect(out[0]!.commit).toBe(10);
  });

  it('keeps non-contiguous appends, other peers, other terms and other kinds apart, in order', () => {
    const input = [
      msg({ index: 10, logTerm: 2, entries: [ent(11)] }),
      msg({ index: 12, logTerm: 2, entries: [ent(13)] }), // gap
      msg({ to: 'n3', index: 13, logTerm: 2, entries: [ent(14)] }), // other peer
      msg({ type: 'heartbeat', to: 'n3' }),
      msg({ to: 'n3', index: 14, logTerm: 2, entries: [ent(15)] }), // separated by a heartbeat
      msg({ to: 'n3', term: 3, index: 15, logTerm: 2, entries: [ent(16, 3)] }), // new term
    ];
    expect(coalesceMessages(input)).toEqual(input);
  });

  it('keeps only the highest accepting append response of a run, never a rejection', () => {
    const r = (index: number, reject = false) => msg({ type: 'appResp', from: 'n2', to: 'n1', index, reject });
    const out = coalesceMessages([r(5), r(7), r(9), r(9, true), r(10), r(12)]);
    expect(out.map((m) => [m.index, m.reject])).toEqual([
      [9, false],
      [9, true],
      [12, false],
    ]);
  });
});
