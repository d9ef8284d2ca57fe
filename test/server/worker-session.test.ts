import { describe, expect, it } from 'vitest';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { ConnectRequest, ConnectResponse, RunAssignment } from '../../src/gen/herald/v1/worker_service.js';
import { MAX_BATCH_MESSAGE_BYTES, SessionRegistry } from '../../src/server/leader/worker-session.js';

/** A stream that records writes and can break after a number of them. */
function fakeCall(breakAfter = Infinity) {
  const written: ConnectResponse[] = [];
  const call = {
    destroyed: false,
    writableEnded: false,
    write(msg: ConnectResponse) {
      if (written.length >= breakAfter) {
        call.destroyed = true;
        throw new Error('stream gone');
      }
      written.push(msg);
      return true;
    },
    end() {
      call.writableEnded = true;
    },
  };
  return { call: call as unknown as ServerDuplexStream<ConnectRequest, ConnectResponse>, written };
}

const assignment = (i: number, payloadBytes = 0): RunAssignment => ({
  runId: `j${i}@1000`,
  jobId: `j${i}`,
  taskType: 't',
  slotUnixMs: 1000,
  scheduledUnixMs: 1000,
  attempt: 1,
  fencingToken: 10 + i,
  leaseDeadlineUnixMs: 31_000,
  leaseDurationMs: 30_000,
  payload: Buffer.alloc(payloadBytes),
  executionTimeoutMs: 0,
  manual: false,
  backfilled: false,
  startDelayMs: 0,
});

/** Sessions are opened by a term's registry, which numbers them. */
const sessions = new SessionRegistry();

describe('WorkerSession batched writes', () => {
  it('sends one message for a batching worker and one per run for the others', () => {
    const a = fakeCall();
    expect(sessions.open('w', new Set(['t']), 10, a.call, true).sendAssignments([0, 1, 2].map((i) => assignment(i)))).toBe(3);
    expect(a.written.map((m) => m.message?.$case)).toEqual(['assignments']);
    const b = fakeCall();
    expect(sessions.open('w', new Set(['t']), 10, b.call, false).sendAssignments([0, 1, 2].map((i) => assignment(i)))).toBe(3);
    expect(b.written.map((m) => m.message?.$case)).toEqual(['assignment', 'assignment', 'assignment']);
  });

  it('cuts a batch with large payloads into messages of about MAX_BATCH_MESSAGE_BYTES, in order', () => {
    const { call, written } = fakeCall();
    const big = Math.floor(MAX_BATCH_MESSAGE_BYTES / 3);
    const list = Array.from({ length: 10 }, (_, i) => assignment(i, big));
    expect(sessions.open('w', new Set(['t']), 10, call, true).sendAssignments(list)).toBe(10);
    expect(written.length).toBeGreaterThanOrEqual(3);
    const ids = written.flatMap((m) =>
      m.message?.$case === 'assignments' ? m.message.assignments.assignments.map((a) => a.runId) : m.message?.$case === 'assignment' ? [m.message.assignment.runId] : [],
    );
    expect(ids).toEqual(list.map((a) => a.runId));
    for (const m of written) {
      const n = m.message?.$case === 'assignments' ? m.message.assignments.assignments.reduce((s, a) => s + a.payload.length, 0) : 0;
      expect(n).toBeLessThanOrEqual(MAX_BATCH_MESSAGE_BYTES + big);
    }
  });

  it('reports how many assignments were written when the stream breaks half-way', () => {
    const { call } = fakeCall(1);
    const big = Math.floor(MAX_BATCH_MESSAGE_BYTES / 2);
    const list = Array.from({ length: 6 }, (_, i) => assignment(i, big));
    const sent = sessions.open('w', new Set(['t']), 10, call, true).sendAssignments(list);
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan(6);
  });
});

describe('SessionRegistry', () => {
  it('numbers the sessions it opens itself: two registries (two terms, two nodes) do not share a counter', () => {
    const a = new SessionRegistry();
    const b = new SessionRegistry();
    expect([a.open('w1', new Set(['t']), 1, fakeCall().call).sessionId, a.open('w2', new Set(['t']), 1, fakeCall().call).sessionId]).toEqual([1, 2]);
    expect(b.open('w1', new Set(['t']), 1, fakeCall().call).sessionId).toBe(1);
  });

  it("a worker's reconnect replaces its older session", () => {
    const r = new SessionRegistry();
    const old = fakeCall();
    const first = r.open('w', new Set(['t']), 1, old.call);
    r.add(first);
    const second = r.open('w', new Set(['t']), 1, fakeCall().call);
    r.add(second);
    expect(r.ofWorker('w')).toBe(second);
    expect(first.closed).toBe(true);
    expect(r.all()).toEqual([second]);
  });
});
