// Member identity on the peer port: a batch addressed to another incarnation of this node is
// refused (WRONG_INCARNATION), and from an incarnation of its sender the configuration does not
// list only a leader's messages are taken.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { StreamRequest } from '../../src/gen/herald/raft/v1/raft.js';
import { incarnationCheck } from '../../src/server/peer/incarnation-check.js';
import type { ConfState, Message, MessageType } from '../../src/raft/types.js';

const conf: ConfState = { voters: ['n1', 'n2', 'n3'], incarnations: { n1: 'i1', n2: 'i2' } };
const check = incarnationCheck('n1', 'i1', () => conf, pino({ level: 'silent' }));
const req = (sender: string, target: string): StreamRequest => ({ clusterId: 'c', messages: [], effects: [], effectsFrom: '', senderIncarnation: sender, targetIncarnation: target, featureLevel: 0 });
const msg = (type: MessageType, from: string): Message => ({ type, from, to: 'n1', term: 2, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0, rejectHintTerm: 0 }) as unknown as Message;

describe('incarnations on the peer stream', () => {
  it('refuses a batch meant for another incarnation of this node, naming the command to run', () => {
    expect(check.wrongTarget(req('i2', 'i1'))).toBeUndefined();
    expect(check.wrongTarget(req('i2', ''))).toBeUndefined();
    const err = check.wrongTarget(req('i2', 'old'));
    expect(err?.code).toBe('WRONG_INCARNATION');
    expect(err?.message).toMatch(/herald cluster add n1/);
  });

  it('takes only leader messages from an incarnation of the sender the configuration does not list', () => {
    const batch = [msg('vote', 'n2'), msg('app', 'n2'), msg('appResp', 'n2'), msg('heartbeat', 'n2')];
    expect(check.filter(req('i2', 'i1'), batch)).toEqual(batch);
    expect(check.filter(req('wiped', 'i1'), batch).map((m) => m.type)).toEqual(['app', 'heartbeat']);
    expect(check.dropped).toBe(2);
    // A member the configuration lists without an incarnation (bootstrap) is taken as it comes.
    const fromN3 = [msg('vote', 'n3')];
    expect(check.filter(req('anything', 'i1'), fromN3)).toEqual(fromN3);
  });
});
