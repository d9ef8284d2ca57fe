// A follower's proposals after a leadership transfer: the old leader, now a follower, names the
// new one; this node goes there at once instead of retrying the old leader until its own view
// catches up (after which the old leader may have closed its port). And a stopping node keeps its
// peer port open while other nodes still forward to it.

import { connectivityState, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RaftServiceClient } from '../../src/gen/herald/raft/v1/raft.js';
import { HeraldError } from '../../src/herald-error.js';
import type { RaftDriver } from '../../src/raft/driver/raft-driver.js';
import { toServiceError } from '../../src/server/grpc/service-error.js';
import { ForwardLinger } from '../../src/server/node/forward-linger.js';
import { createProposer } from '../../src/server/node/proposer.js';

/** This node's Raft view: who it believes leads, and whether it is stopped. */
function fakeDriver(selfId: string, leaderId: string) {
  const events = new EventEmitter();
  const state = { leaderId, stopped: false };
  const driver = {
    events,
    isLeader: () => state.leaderId === selfId && !state.stopped,
    leaderChange: () => ({ leaderId: state.leaderId, leaderAddress: state.leaderId ? `${state.leaderId}.client:1` : '', term: 3, role: 'follower' }),
    propose: async () => {
      if (state.stopped) throw new HeraldError('SHUTTING_DOWN', 'node is shutting down');
      if (state.leaderId !== selfId) throw new HeraldError('NOT_LEADER', `node ${selfId} is not the leader`);
      return { index: 7, result: new Uint8Array([1]) };
    },
  };
  const setLeader = (id: string) => {
    state.leaderId = id;
    events.emit('leaderChanged', driver.leaderChange());
  };
  return { driver: driver as unknown as RaftDriver, setLeader, stop: () => (state.stopped = true) };
}

/** A peer's Forward endpoint on a connected channel, answering with `answer(calls so far)`. */
function fakePeer(answer: () => ServiceError | { index: number; result: Buffer }) {
  const calls: number[] = [];
  const client = {
    getChannel: () => ({ getConnectivityState: () => connectivityState.READY }),
    forward: (_req: unknown, _md: Metadata, _opts: unknown, cb: (err: ServiceError | null, resp?: unknown) => void) => {
      calls.push(Date.now());
      const a = answer();
      setImmediate(() => ('code' in a ? cb(a) : cb(null, a)));
    },
  };
  return { client: client as unknown as RaftServiceClient, calls };
}

const clock = { nowMs: () => performance.now() };

describe('proposer: following the leader a refusing node names', () => {
  it('after a transfer n1 names n2; n3 goes straight to n2, and keeps going there until its own view moves', async () => {
    const { driver, setLeader } = fakeDriver('n3', 'n1');
    const n1 = fakePeer(() => toServiceError(new HeraldError('NOT_LEADER', 'node n1 is not the leader', { leaderId: 'n2' })));
    const n2 = fakePeer(() => ({ index: 42, result: Buffer.from([9]) }));
    const peers: Record<string, RaftServiceClient> = { n1: n1.client, n2: n2.client };
    const propose = createProposer({ selfId: 'n3', clusterId: 'c', driver, peerClient: (id) => peers[id], defaultTimeoutMs: 2000, clock });

    const started = performance.now();
    await expect(propose(new Uint8Array([1, 2]))).resolves.toMatchObject({ index: 42 });
    // No back-off before following the hint (a plain retry waits 50 ms for a leader change).
    expect(performance.now() - started).toBeLessThan(45);
    expect([n1.calls.length, n2.calls.length]).toEqual([1, 1]);

    // n3 still believes n1 leads: the next proposal goes to n2 without asking n1 again.
    await propose(new Uint8Array([3]));
    expect([n1.calls.length, n2.calls.length]).toEqual([1, 2]);

    // Its own view moves (to n1 again, say a newer term): the hint is forgotten, n1 is asked first.
    setLeader('n1');
    await expect(propose(new Uint8Array([4]))).resolves.toMatchObject({ index: 42 });
    expect([n1.calls.length, n2.calls.length]).toEqual([2, 3]);
  });

  it('a hint naming this node itself is not followed: it waits for its own view instead', async () => {
    const { driver, setLeader } = fakeDriver('n3', 'n1');
    const n1 = fakePeer(() => toServiceError(new HeraldError('NOT_LEADER', 'node n1 is not the leader', { leaderId: 'n3' })));
    const propose = createProposer({ selfId: 'n3', clusterId: 'c', driver, peerClient: (id) => (id === 'n1' ? n1.client : undefined), defaultTimeoutMs: 2000, clock });
    const p = propose(new Uint8Array([1]));
    await new Promise((r) => setTimeout(r, 120));
    setLeader('n3');
    await expect(p).resolves.toMatchObject({ index: 7 });
    expect(n1.calls.length).toBeGreaterThanOrEqual(1);
  });

  it('a transport failure (no Herald code) is not a hint and is not retried: the outcome is unknown', async () => {
    const { driver } = fakeDriver('n3', 'n1');
    const failure = Object.assign(new Error('Connection dropped'), { code: status.UNAVAILABLE, details: 'Connection dropped', metadata: new Metadata() }) as ServiceError;
    const n1 = fakePeer(() => failure);
    const propose = createProposer({ selfId: 'n3', clusterId: 'c', driver, peerClient: () => n1.client, defaultTimeoutMs: 2000, clock });
    await expect(propose(new Uint8Array([1]))).rejects.toMatchObject({ code: 'NOT_READY' });
    expect(n1.calls.length).toBe(1);
  });

  it('a stopping node refuses a forwarded command with SHUTTING_DOWN naming the leader it knows', async () => {
    const { driver, stop } = fakeDriver('n1', 'n2');
    stop();
    const propose = createProposer({ selfId: 'n1', clusterId: 'c', driver, peerClient: () => undefined, defaultTimeoutMs: 2000, clock });
    const err = await propose(new Uint8Array([1]), { forward: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HeraldError);
    expect(err).toMatchObject({ code: 'SHUTTING_DOWN', details: { leaderId: 'n2', leaderAddress: 'n2.client:1' } });
  });
});

describe('ForwardLinger: a stopping node keeps its peer port while forwards still arrive', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('no forward seen: closes at once; forwards arriving: waits until a quiet period has passed; never past the deadline', async () => {
    vi.useFakeTimers();
    let now = 1000;
    const fakeClock = { nowMs: () => now };
    const advance = async (ms: number) => {
      now += ms;
      await vi.advanceTimersByTimeAsync(ms);
    };
    const linger = new ForwardLinger(fakeClock);
    let done = false;
    await linger.quiet(500, now + 5000); // nothing forwarded here yet
    linger.seen();
    void linger.quiet(500, now + 5000).then(() => (done = true));
    await advance(300);
    linger.seen(); // another forward 300 ms in: quiet from here on
    await advance(300);
    expect(done).toBe(false);
    await advance(250);
    expect(done).toBe(true);

    // Forwards that never stop: the deadline ends the wait.
    done = false;
    const deadline = now + 1000;
    linger.seen();
    void linger.quiet(500, deadline).then(() => (done = true));
    for (let i = 0; i < 9; i++) {
      await advance(100);
      linger.seen();
    }
    expect(done).toBe(false);
    linger.seen();
    await advance(150);
    expect(done).toBe(true);
  });
});
