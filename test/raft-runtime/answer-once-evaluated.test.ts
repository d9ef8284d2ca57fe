// A proposal that asks to be answered once evaluated (a create: its answer is its result alone)
// is answered when the state machine has its results, before the write of them lands; the applied
// index — and so every read that must see the write — moves only once it landed. Proposals that
// did not ask wait for the write, as before.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import { ProposalTracker } from '../../src/raft/driver/proposal-tracker.js';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import type { TimerHandle } from '../../src/raft/ports.js';
import type { ResultsEvaluated, ResultWanted, StateMachine } from '../../src/raft/state-machine.js';
import type { Entry } from '../../src/raft/types.js';
import { createNode } from '../../src/server/node/create-node.js';
import type { HeraldNode } from '../../src/server/node/herald-node.js';

const logger = pino({ level: 'silent' });
const members = [{ id: 'n1', peerAddress: '127.0.0.1:0', clientAddress: '127.0.0.1:0' }];

/** The KV state machine, whose writes wait at a gate after it has said its results (echoes of the commands). */
class GatedStateMachine implements Omit<StateMachine, 'effects'> {
  private gate: Promise<void> = Promise.resolve();
  private openGate: () => void = () => undefined;
  constructor(private readonly inner: KvStateMachine) {}

  close_(): void {
    this.gate = new Promise<void>((r) => (this.openGate = r));
  }
  open(): void {
    this.openGate();
  }

  async apply(entries: readonly Entry[], wanted?: ResultWanted, evaluated?: ResultsEvaluated): Promise<Uint8Array[]> {
    const results = entries.map((e) => e.data);
    evaluated?.(results);
    await this.gate;
    void wanted;
    await this.inner.apply(entries);
    return results;
  }
  appliedIndex = () => this.inner.appliedIndex();
  snapshot = () => this.inner.snapshot();
  restore: StateMachine['restore'] = (m, c) => this.inner.restore(m, c);
  sync = () => this.inner.sync();
  stateHash = () => this.inner.stateHash();
  close = () => this.inner.close();
}

let dir: string;
let node: HeraldNode | undefined;
let sm: GatedStateMachine | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-early-'));
});
afterEach(async () => {
  sm?.open();
  sm = undefined;
  await node?.stop();
  node = undefined;
  await rm(dir, { recursive: true, force: true });
});

const put = (key: string) => encodeKvCommand({ op: 'put', key, value: Buffer.from(key) });
const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  return done;
};

describe('answering once evaluated', () => {
  it('answers an asking proposal before the write lands; the applied index, reads and other proposals wait for it', async () => {
    let gated!: GatedStateMachine;
    node = await createNode({
      id: 'n1',
      members,
      dataDir: join(dir, 'n1'),
      stateMachine: async (d) => (sm = gated = new GatedStateMachine(await KvStateMachine.open(d))) as unknown as StateMachine,
      logger,
      tickMs: 10,
    });
    await node.propose(put('warm'), { timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 200)); // the leader's own configuration entry, applied

    gated.close_();
    const early = node.propose(put('early'), { timeoutMs: 5000, answerOnceEvaluated: true });
    const out = await early; // answered with the gate still closed
    expect(Buffer.from(out.result).equals(Buffer.from(put('early')))).toBe(true);
    const appliedBefore = node.driver.appliedIndex();
    expect(appliedBefore).toBeLessThan(out.index);
    const read = node.readIndex({ timeoutMs: 5000 });
    const plain = node.propose(put('plain'), { timeoutMs: 5000 });
    expect(await settled(read)).toBe(false);
    expect(await settled(plain)).toBe(false);

    gated.open();
    expect(await read).toBeGreaterThanOrEqual(out.index);
    const p = await plain;
    expect(node.driver.appliedIndex()).toBeGreaterThanOrEqual(p.index);
  });
});

class ManualTimers {
  private timers: Array<{ fn: () => void; cancelled: boolean }> = [];
  after(_ms: number, fn: () => void): TimerHandle {
    const t = { fn, cancelled: false };
    this.timers.push(t);
    return t as unknown as TimerHandle;
  }
  cancel(h: TimerHandle): void {
    (h as unknown as { cancelled: boolean }).cancelled = true;
  }
  fireAll(): void {
    for (const t of this.timers) if (!t.cancelled) (t.cancelled = true), t.fn();
  }
}

describe('ProposalTracker: answers once evaluated', () => {
  it('evaluated() settles only the proposals that asked, applied() the rest; a replaced entry fails NOT_LEADER either way', async () => {
    const tracker = new ProposalTracker(new ManualTimers());
    const a = tracker.track(5, 2, 1000, true);
    const b = tracker.track(6, 2, 1000, false);
    const c = tracker.track(7, 2, 1000, true);
    expect(tracker.hasEarly()).toBe(true);
    const entries: Entry[] = [5, 6, 7].map((index) => ({ index, term: index === 7 ? 3 : 2, type: 'normal', data: new Uint8Array([index]) }));
    const results = [5, 6, 7].map((i) => new Uint8Array([i, i]));
    tracker.evaluated(entries, results, 'n2');
    expect((await a).result).toEqual(new Uint8Array([5, 5]));
    const cErr = await c.catch((e: unknown) => e);
    expect(isHeraldError(cErr, 'NOT_LEADER')).toBe(true);
    expect(await settled(b)).toBe(false);
    expect(tracker.hasEarly()).toBe(false);
    tracker.applied(entries, results, 'n2');
    expect((await b).result).toEqual(new Uint8Array([6, 6]));
    expect(tracker.size).toBe(0);
  });

  it('an asking proposal that times out or is failed leaves no early work counted', async () => {
    const timers = new ManualTimers();
    const tracker = new ProposalTracker(timers);
    const a = tracker.track(9, 1, 10, true);
    timers.fireAll();
    expect(isHeraldError(await a.catch((e: unknown) => e), 'PROPOSAL_TIMEOUT')).toBe(true);
    expect(tracker.hasEarly()).toBe(false);
    const b = tracker.track(10, 1, 10, true);
    tracker.failAll(() => new Error('stopped'));
    await expect(b).rejects.toThrow('stopped');
    expect(tracker.hasEarly()).toBe(false);
  });
});
