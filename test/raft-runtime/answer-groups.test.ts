// A group-committed batch is answered in groups, one event-loop turn apart, so the first answers
// leave while the rest are still being resolved (closed-loop clients then stop moving in lockstep).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeKvCommand } from '../../src/raft/kv/kv-command.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import { createNode } from '../../src/server/node/create-node.js';
import type { HeraldNode } from '../../src/server/node/herald-node.js';
import { incarnationOf } from '../../src/raft/core/membership.js';

const logger = pino({ level: 'silent' });
const members = [{ id: 'n1', peerAddress: '127.0.0.1:0', clientAddress: '127.0.0.1:0' }];

let dir: string;
let node: HeraldNode | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-answers-'));
});
afterEach(async () => {
  await node?.stop();
  node = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** Counts event-loop turns (one setImmediate hop each) until stopped. */
function turnCounter(): { now: () => number; stop: () => void } {
  let turn = 0;
  let running = true;
  const hop = (): void => {
    if (!running) return;
    turn++;
    setImmediate(hop);
  };
  setImmediate(hop);
  return { now: () => turn, stop: () => void (running = false) };
}

async function proposeBurst(n: HeraldNode, count: number): Promise<Array<{ i: number; index: number; turn: number }>> {
  const turns = turnCounter();
  const answered: Array<{ i: number; index: number; turn: number }> = [];
  // All proposed in one tick: they share one Ready, one fsync and one apply.
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      n.propose(encodeKvCommand({ op: 'put', key: `k${i}`, value: Buffer.from(`v${i}`) }), { timeoutMs: 5000 }).then((o) => {
        answered.push({ i, index: o.index, turn: turns.now() });
      }),
    ),
  );
  turns.stop();
  return answered;
}

describe('answering a group-committed batch', () => {
  it('answers 96 proposals of one apply in groups of 32, in log order, each with its own entry', async () => {
    node = await createNode({ id: 'n1', members, dataDir: join(dir, 'n1'), stateMachine: (d) => KvStateMachine.open(d), logger, tickMs: 10 });
    await node.propose(encodeKvCommand({ op: 'put', key: 'warm', value: Buffer.from('x') }), { timeoutMs: 5000 });
    // The leader binds its own incarnation (a configuration entry) on its own: done before counting.
    for (let i = 0; i < 500 && incarnationOf(node.driver.confState(), 'n1') === ''; i++) await new Promise((r) => setTimeout(r, 10));
    expect(incarnationOf(node.driver.confState(), 'n1')).not.toBe('');
    await new Promise((r) => setTimeout(r, 50)); // its apply
    const applies0 = node.driver.stats.entriesApplied;

    const answered = await proposeBurst(node, 96);

    expect(answered).toHaveLength(96);
    // One batch: 96 consecutive entries, answered in log order.
    const indexes = answered.map((a) => a.index);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
    expect(new Set(indexes).size).toBe(96);
    expect(indexes[95]! - indexes[0]!).toBe(95);
    expect(answered.map((a) => a.i)).toEqual(Array.from({ length: 96 }, (_, i) => i));
    expect(node.driver.stats.entriesApplied - applies0).toBe(96);
    // Three groups, each answered in a later turn than the one before.
    const groups = [answered.slice(0, 32), answered.slice(32, 64), answered.slice(64)].map((g) => new Set(g.map((a) => a.turn)));
    for (const g of groups) expect(g.size).toBe(1);
    const [a, b, c] = groups.map((g) => [...g][0]!);
    expect(a).toBeLessThan(b);
    expect(b).toBeLessThan(c);
  });

  it('answers a batch no larger than a group in one turn', async () => {
    node = await createNode({ id: 'n1', members, dataDir: join(dir, 'n1'), stateMachine: (d) => KvStateMachine.open(d), logger, tickMs: 10 });
    await node.propose(encodeKvCommand({ op: 'put', key: 'warm', value: Buffer.from('x') }), { timeoutMs: 5000 });
    const answered = await proposeBurst(node, 20);
    expect(answered).toHaveLength(20);
    expect(new Set(answered.map((a) => a.turn)).size).toBe(1);
  });
});
