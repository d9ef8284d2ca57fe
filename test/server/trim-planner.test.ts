import { describe, expect, it } from 'vitest';
import { MAX_JOBS_PER_TRIM, STALE_AFTER_MS, TRIM_AFTER_FINISHES, TrimPlanner } from '../../src/server/leader/trim-planner.js';

function fakeClock() {
  const c = { t: 1_000, nowMs: () => c.t };
  return c;
}

describe('TrimPlanner', () => {
  it('makes a job due after TRIM_AFTER_FINISHES finishes, not at its first', () => {
    const clock = fakeClock();
    const p = new TrimPlanner(clock);
    for (let i = 0; i < TRIM_AFTER_FINISHES - 1; i++) p.noteFinished('busy');
    expect(p.take()).toEqual([]);
    p.noteFinished('busy');
    expect(p.take()).toEqual(['busy']);
    // Taken: not due again until it finishes more runs.
    expect(p.take()).toEqual([]);
    expect(p.size).toBe(0);
  });

  it('trims a rare job once its oldest untrimmed finish is STALE_AFTER_MS old', () => {
    const clock = fakeClock();
    const p = new TrimPlanner(clock);
    p.noteFinished('rare');
    clock.t += STALE_AFTER_MS - 1;
    expect(p.take()).toEqual([]);
    clock.t += 1;
    expect(p.take()).toEqual(['rare']);
  });

  it('hands out at most MAX_JOBS_PER_TRIM jobs per command; the rest stay due', () => {
    const p = new TrimPlanner(fakeClock());
    const n = MAX_JOBS_PER_TRIM + 5;
    for (let j = 0; j < n; j++) for (let i = 0; i < TRIM_AFTER_FINISHES; i++) p.noteFinished(`j${j}`);
    expect(p.take()).toHaveLength(MAX_JOBS_PER_TRIM);
    expect(p.take()).toHaveLength(5);
    expect(p.take()).toEqual([]);
  });

  it('takes busy jobs first, then stale ones oldest first, and stops at the first fresh one', () => {
    const clock = fakeClock();
    const p = new TrimPlanner(clock);
    p.noteFinished('old1');
    clock.t += 10;
    p.noteFinished('old2');
    clock.t += 10;
    p.noteFinished('fresh');
    for (let i = 0; i < TRIM_AFTER_FINISHES; i++) p.noteFinished('busy');
    clock.t += STALE_AFTER_MS - 5; // old1 and old2 are stale, fresh (and busy's start) not
    expect(p.take(2)).toEqual(['busy', 'old1']);
    expect(p.take()).toEqual(['old2']);
    expect(p.take()).toEqual([]);
    expect(p.size).toBe(1);
  });

  it('puts a failed trim back so the next round retries it', () => {
    const p = new TrimPlanner(fakeClock());
    for (let i = 0; i < TRIM_AFTER_FINISHES; i++) p.noteFinished('a');
    const taken = p.take();
    p.putBack(taken);
    expect(p.take()).toEqual(['a']);
  });
});
