// A leader that must send a follower a snapshot, and whose own state machine cannot give one (a
// failed write it holds, a store it cannot read), stops as after a failed apply: retrying every
// heartbeat kept it in office forever with a follower it could never catch up (Raft simulator,
// seed 401278). A transfer that fails on the way is the network's: the leader retries it.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import { RaftDriver } from '../../src/raft/driver/raft-driver.js';
import type { LogSink, SnapshotSend, SnapshotSent } from '../../src/raft/ports.js';
import type { SnapshotSource } from '../../src/raft/state-machine.js';
import type { Message } from '../../src/raft/types.js';
import { NoopMachine, stillTimers, turn } from './helpers/driver-fakes.js';

const log: LogSink = { persist: async () => undefined, compact: async () => undefined };

class Machine extends NoopMachine {
  snapshotCalls = 0;
  constructor(private readonly snapshotFails: boolean) {
    super(5);
  }
  override async snapshot(): Promise<SnapshotSource> {
    this.snapshotCalls++;
    if (this.snapshotFails) throw new Error('state machine write failed earlier');
    return { appliedIndex: 5, chunks: async function* () {}, close: async () => undefined };
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 30; i++) await turn();
}

function msg(type: Message['type'], term: number, extra: Partial<Message> = {}): Message {
  return { type, from: 'n2', to: 'n1', term, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0, rejectHintTerm: 0, ...extra };
}

/** n1 leads term 2 over a log compacted to a snapshot at 5; n2 says it has nothing, so it needs the snapshot. */
async function leaderNeedingSnapshot(sm: Machine, sendSnapshot: (s: SnapshotSend) => Promise<SnapshotSent>) {
  const storage = new MemoryStorage(['n1', 'n2']);
  storage.applySnapshot({ index: 5, term: 1, conf: { voters: ['n1', 'n2'], learners: [] } });
  storage.setHardState({ term: 1, vote: '', commit: 5 });
  const members = ['n1', 'n2'].map((id) => ({ id, peerAddress: '', clientAddress: '' }));
  const driver = new RaftDriver(
    {
      id: 'n1',
      members,
      log,
      storage,
      stateMachine: sm,
      transport: { send: () => undefined, sendEffects: () => undefined, sendSnapshot },
      snapshots: { read: () => (async function* () {})(), prune: async () => undefined },
      timers: stillTimers,
      logger: pino({ level: 'silent' }),
    },
    5,
  );
  driver.start();
  driver.campaign();
  await settle();
  // Pre-vote (on by default), then the vote.
  if (driver.status().role === 'preCandidate') {
    driver.step([msg('preVoteResp', 2)]);
    await settle();
  }
  driver.step([msg('voteResp', 2)]);
  await settle();
  expect(driver.isLeader()).toBe(true);
  driver.step([msg('appResp', 2, { reject: true, index: 5, rejectHint: 0 })]);
  await settle();
  return driver;
}

describe('a leader whose follower needs a snapshot', () => {
  it('stops when its own state machine cannot give one', async () => {
    const sm = new Machine(true);
    const driver = await leaderNeedingSnapshot(sm, async (s) => {
      await s.stateMachine.snapshot();
      return { index: 5, bytes: 0 };
    });
    expect(sm.snapshotCalls).toBe(1);
    expect(driver.failure()?.message).toBe('state machine write failed earlier');
    await driver.stop();
  });

  it('keeps leading and retries when the transfer fails on the way', async () => {
    const sm = new Machine(false);
    let sends = 0;
    const driver = await leaderNeedingSnapshot(sm, async (s) => {
      sends++;
      await s.stateMachine.snapshot();
      throw new Error('peer unreachable');
    });
    expect(sends).toBe(1);
    expect(driver.failure()).toBeUndefined();
    // The next heartbeat reply from n2 asks for the snapshot again.
    driver.step([msg('heartbeatResp', 2)]);
    await settle();
    expect(sends).toBe(2);
    expect(driver.failure()).toBeUndefined();
    expect(driver.isLeader()).toBe(true);
    await driver.stop();
  });
});
