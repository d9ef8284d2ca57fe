// Smoke test of `npm run bench -- steady` at a tiny size: every slot of the window has exactly
// one run, started once, and the JSON has the documented fields (no timing targets here).
import { describe, expect, it } from 'vitest';
import { runBench } from './helpers/run-bench.js';

describe('bench steady (tiny)', () => {
  it('fires every-second jobs through Worker-library processes; lost = doubled = 0', { timeout: 120_000 }, async () => {
    const r = await runBench('steady', ['--jobs', '20', '--seconds', '3'], 110_000);
    expect(r.bench).toBe('steady');
    // 20 jobs x 3 one-second slots in the window.
    expect(r.runs).toBe(60);
    expect(r.lost).toBe(0);
    expect(r.notStarted).toBe(0);
    expect(r.doubled).toBe(0);
    for (const k of ['latenessMs', 'claimLatenessMs']) expect(Object.keys(r[k]).sort()).toEqual(['max', 'p50', 'p99']);
    expect(r.latenessMs.p50).toBeLessThanOrEqual(r.latenessMs.max);
  });
});
