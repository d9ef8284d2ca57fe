// ProposeStream end to end over real gRPC on 127.0.0.1, with a scripted propose() standing in for
// the Raft node: batching both ways, per-proposal errors, the in-flight limit, cluster checks,
// the end of a stream, and a broken stream failing what it had in flight.
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { RaftServiceService, type ProposeStreamRequest, type ProposeStreamResponse } from '../../src/gen/herald/raft/v1/raft.js';
import { HeraldError, isHeraldError } from '../../src/herald-error.js';
import { raftClient } from '../../src/server/node/create-node.js';
import { handleProposeStream, type ProposeStreamDeps } from '../../src/server/peer/propose-stream.js';
import { ProposeStreamClient } from '../../src/server/peer/propose-stream-client.js';

interface Deferred {
  command: Buffer;
  timeoutMs: number;
  mayForward: boolean;
  resolve: (o: { index: number; result: Uint8Array }) => void;
  reject: (e: unknown) => void;
}

let cleanup: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

async function startServer(opts: Partial<ProposeStreamDeps> = {}) {
  const calls: Deferred[] = [];
  const deps: ProposeStreamDeps = {
    clusterId: 'c1',
    propose: (command, timeoutMs, mayForward) =>
      new Promise((resolve, reject) => calls.push({ command: Buffer.from(command), timeoutMs, mayForward, resolve, reject })),
    ...opts,
  };
  const server = new Server();
  server.addService(RaftServiceService, {
    proposeStream: (call: ServerDuplexStream<ProposeStreamRequest, ProposeStreamResponse>) => handleProposeStream(deps, call, true),
  } as never);
  const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  cleanup.push(() => new Promise<void>((r) => server.tryShutdown(() => r())));
  const client = (clusterId = 'c1') => {
    const raw = raftClient(`127.0.0.1:${port}`);
    const c = new ProposeStreamClient(raw, { clusterId });
    cleanup.push(() => {
      c.close();
      raw.close();
    });
    return c;
  };
  return { server, calls, client };
}

const until = async (what: string, fn: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};
const settled = <T>(p: Promise<T>) => p.then((v) => ({ ok: true as const, v }), (e: unknown) => ({ ok: false as const, e }));

describe('ProposeStream', () => {
  it('carries proposals made in one turn in one message and answers each by id, whatever order they finish in', async () => {
    const { calls, client } = await startServer();
    const c = client();
    const ps = Array.from({ length: 50 }, (_, i) => c.propose(Buffer.from(`cmd-${i}`)));
    await until('50 proposals at the node', () => calls.length === 50);
    expect(c.stats.messagesSent).toBe(1);
    expect(calls.map((x) => x.command.toString())).toEqual(Array.from({ length: 50 }, (_, i) => `cmd-${i}`));
    expect(calls.every((x) => x.mayForward)).toBe(true);
    // Finish them in reverse, all in one turn: one outcomes message.
    for (let i = 49; i >= 0; i--) calls[i]!.resolve({ index: 100 + i, result: Buffer.from(`res-${i}`) });
    const out = await Promise.all(ps);
    expect(out.map((o) => o.index)).toEqual(Array.from({ length: 50 }, (_, i) => 100 + i));
    expect(out.map((o) => Buffer.from(o.result).toString())).toEqual(Array.from({ length: 50 }, (_, i) => `res-${i}`));
    expect(c.stats.messagesReceived).toBe(1);
    expect(c.inFlight()).toBe(0);
  });

  it('fails only the proposal that failed, with its code and the leader hint; an empty command is refused without being proposed', async () => {
    const { calls, client } = await startServer();
    const c = client();
    const good = c.propose(Buffer.from('a'));
    const notLeader = settled(c.propose(Buffer.from('b')));
    const empty = settled(c.propose(Buffer.alloc(0)));
    const crashed = settled(c.propose(Buffer.from('c')));
    await until('3 proposals at the node', () => calls.length === 3);
    calls[0]!.resolve({ index: 7, result: Buffer.from('ok') });
    calls[1]!.reject(new HeraldError('NOT_LEADER', 'node n2 is not the leader', { leaderId: 'n1', leaderAddress: '127.0.0.1:7101' }));
    calls[2]!.reject(new Error('a bug with internals in its message'));
    expect((await good).index).toBe(7);
    const nl = await notLeader;
    expect(nl.ok).toBe(false);
    if (!nl.ok) {
      expect(isHeraldError(nl.e, 'NOT_LEADER')).toBe(true);
      expect((nl.e as HeraldError).details).toMatchObject({ leaderId: 'n1', leaderAddress: '127.0.0.1:7101', remote: true });
    }
    const em = await empty;
    expect(!em.ok && isHeraldError(em.e, 'INVALID_ARGUMENT') && em.e.message).toBe('command is empty');
    const cr = await crashed;
    // Anything that is not a HeraldError becomes INTERNAL, without leaking its message.
    expect(!cr.ok && isHeraldError(cr.e, 'INTERNAL') && cr.e.message).toBe('internal error (see the server log)');
  });

  it('answers proposals beyond the in-flight limit with LIMIT_EXCEEDED at once and takes new ones as others finish', async () => {
    const { calls, client } = await startServer({ maxInFlight: 3 });
    const c = client();
    const ps = Array.from({ length: 5 }, (_, i) => settled(c.propose(Buffer.from(`p${i}`))));
    const over = await Promise.all([ps[3]!, ps[4]!]);
    for (const o of over) expect(!o.ok && isHeraldError(o.e, 'LIMIT_EXCEEDED')).toBe(true);
    expect(calls.length).toBe(3);
    calls[0]!.resolve({ index: 1, result: Buffer.alloc(0) });
    expect((await ps[0]!).ok).toBe(true);
    const later = c.propose(Buffer.from('later'));
    await until('the later proposal at the node', () => calls.length === 4);
    calls[3]!.resolve({ index: 2, result: Buffer.alloc(0) });
    expect((await later).index).toBe(2);
  });

  it('refuses a stream from another cluster: its proposals fail with CLUSTER_MISMATCH and none is proposed', async () => {
    const { calls, client } = await startServer();
    const c = client('other-cluster');
    const out = await Promise.all([settled(c.propose(Buffer.from('x'))), settled(c.propose(Buffer.from('y')))]);
    for (const o of out) expect(!o.ok && isHeraldError(o.e, 'CLUSTER_MISMATCH')).toBe(true);
    expect(calls.length).toBe(0);
  });

  it('a stream that breaks fails what is in flight with OUTCOME_UNKNOWN; the next proposal opens a new stream', async () => {
    const { server, calls, client } = await startServer();
    const c = client();
    const inflight = settled(c.propose(Buffer.from('lost?')));
    await until('the proposal at the node', () => calls.length === 1);
    server.forceShutdown();
    const r = await inflight;
    expect(!r.ok && isHeraldError(r.e, 'OUTCOME_UNKNOWN')).toBe(true);
    expect(c.inFlight()).toBe(0);
    // Nothing listens any more: the next proposal opens (and loses) a second stream, and never hangs.
    const next = await settled(c.propose(Buffer.from('next'), 500));
    expect(next.ok).toBe(false);
    expect(c.stats.streamsOpened).toBe(2);
  });

  it("takes a proposal's timeout as given up to 120 s, caps longer ones and uses the 10 s default for 0", async () => {
    const { calls, client } = await startServer();
    const c = client();
    const ps = [c.propose(Buffer.from('a'), 2500), c.propose(Buffer.from('b'), 10 * 86_400_000), c.propose(Buffer.from('c'), 0)];
    await until('3 proposals at the node', () => calls.length === 3);
    expect(calls.map((x) => x.timeoutMs)).toEqual([2500, 120_000, 10_000]);
    for (const x of calls) x.resolve({ index: 1, result: Buffer.alloc(0) });
    await Promise.all(ps);
  });

  it('when the caller ends its side, proposals in flight are still answered before the stream ends', async () => {
    const { calls, client } = await startServer();
    const c = client();
    const p = c.propose(Buffer.from('last'));
    await until('the proposal at the node', () => calls.length === 1);
    let ended = false;
    const ending = c.end().then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(ended).toBe(false); // the stream stays open for the answer
    const refused = await settled(c.propose(Buffer.from('after end')));
    expect(!refused.ok && isHeraldError(refused.e, 'SHUTTING_DOWN')).toBe(true);
    calls[0]!.resolve({ index: 9, result: Buffer.from('done') });
    expect((await p).index).toBe(9);
    await ending;
    expect(calls.length).toBe(1);
  });
});
