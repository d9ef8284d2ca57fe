// A node proposes at index 14 in term 1, loses that entry to a truncation before applying that
// far, and leads again in term 3 with a new proposal at 14 (found by the simulator, seed 1176).
// The first proposal must settle (outcome unknown: its entry may survive elsewhere), and its
// timer must not fail the second one.
import { describe, expect, it } from 'vitest';
import { isHeraldError } from '../../src/herald-error.js';
import { ProposalTracker } from '../../src/raft/driver/proposal-tracker.js';
import type { TimerHandle } from '../../src/raft/ports.js';

class ManualTimers {
  private now = 0;
  private timers: Array<{ at: number; fn: () => void; cancelled: boolean }> = [];
  after(ms: number, fn: () => void): TimerHandle {
    const t = { at: this.now + ms, fn, cancelled: false };
    this.timers.push(t);
    return t as unknown as TimerHandle;
  }
  cancel(h: TimerHandle): void {
    (h as unknown as { cancelled: boolean }).cancelled = true;
  }
  advance(ms: number): void {
    this.now += ms;
    for (const t of this.timers) if (!t.cancelled && t.at <= this.now) (t.cancelled = true), t.fn();
  }
}

describe('ProposalTracker', () => {
  it('settles a proposal whose index is proposed again in a later term, and keeps the new one', async () => {
    const timers = new ManualTimers();
    const tracker = new ProposalTracker(timers);
    const first = tracker.track(14, 1, 100);
    const firstOutcome = first.then(
      () => 'resolved',
      (e: unknown) => (isHeraldError(e, 'OUTCOME_UNKNOWN') ? 'unknown' : String(e)),
    );
    timers.advance(50);
    const second = tracker.track(14, 3, 100);
    expect(await firstOutcome).toBe('unknown');

    timers.advance(60); // past the first proposal's deadline, not the second's
    expect(tracker.waitsFor(14)).toBe(true);
    tracker.applied([{ index: 14, term: 3, type: 'normal', data: new Uint8Array([1]) }], [new Uint8Array([7])], 'n2');
    expect(await second).toEqual({ index: 14, result: new Uint8Array([7]) });
  });
});
