// Issue 26, fix 1: a follower holding an uncommitted suffix from an old leader receives, in one
// message, a new leader's conflicting entries together with a commit index that covers them.
// The old entries are still what its disk holds at those indexes until this Ready's write
// finishes, so the new ones must not reach the state machine before that write: a crash in the
// window would leave the applied index over entries whose on-disk terms differ.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../src/raft/core/memory-storage.js';
import { RaftDriver } from '../../src/raft/driver/raft-driver.js';
import type { LogSink, PersistInput } from '../../src/raft/ports.js';
import { NoopMachine, stillTimers, turn } from './helpers/driver-fakes.js';
import type { Entry, Message } from '../../src/raft/types.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

function entry(index: number, term: number, text: string): Entry {
  return { index, term, type: 'normal', data: enc.encode(text) };
}

/** A log whose writes complete only when the test opens the gate. */
class GatedLog implements LogSink {
  readonly writes: PersistInput[] = [];
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));
  async persist(input: PersistInput): Promise<void> {
    this.writes.push(input);
    await this.gate;
  }
  async compact(): Promise<void> {}
  release(): void {
    this.open();
  }
}

/** Records what it applied, as "index@term:text". */
class RecordingMachine extends NoopMachine {
  readonly applied: string[] = [];
  constructor() {
    super(1);
  }
  override async apply(entries: readonly Entry[]): Promise<Uint8Array[]> {
    for (const e of entries) this.applied.push(`${e.index}@${e.term}:${dec.decode(e.data)}`);
    return entries.map(() => new Uint8Array(0));
  }
}

describe('a follower replacing an uncommitted suffix', () => {
  it('applies the new entries only once they replaced the old ones on disk', async () => {
    // n1 followed n2 in term 1 and holds 2@1 and 3@1, never committed; only 1 is applied.
    const storage = new MemoryStorage(['n1', 'n2', 'n3']);
    storage.append([entry(1, 1, ''), entry(2, 1, 'old-2'), entry(3, 1, 'old-3')]);
    storage.setHardState({ term: 1, vote: 'n2', commit: 1 });
    const log = new GatedLog();
    const sm = new RecordingMachine();
    const members = ['n1', 'n2', 'n3'].map((id) => ({ id, peerAddress: '', clientAddress: '' }));
    const driver = new RaftDriver(
      {
        id: 'n1',
        members,
        log,
        storage,
        stateMachine: sm,
        transport: { send: () => undefined, sendEffects: () => undefined, sendSnapshot: () => undefined },
        snapshots: { read: () => (async function* () {})(), prune: async () => undefined },
        timers: stillTimers,
        logger: pino({ level: 'silent' }),
      },
      1,
    );
    driver.start();

    // n3 leads term 2 and overwrites 2 and 3, committing them in the same message.
    const append: Message = {
      type: 'app',
      from: 'n3',
      to: 'n1',
      term: 2,
      logTerm: 1,
      index: 1,
      entries: [entry(2, 2, 'new-2'), entry(3, 2, 'new-3')],
      commit: 3,
      reject: false,
      rejectHint: 0,
      rejectHintTerm: 0,
    };
    driver.step([append]);
    for (let i = 0; i < 20; i++) await turn();

    // The write replacing the suffix is in flight: the disk still holds 2@1 and 3@1.
    expect(log.writes.map((w) => w.entries.map((e) => `${e.index}@${e.term}`))).toEqual([['2@2', '3@2']]);
    expect(sm.applied).toEqual([]);

    log.release();
    await driver.waitApplied(3);
    expect(sm.applied).toEqual(['2@2:new-2', '3@2:new-3']);
    await driver.stop();
  });
});
