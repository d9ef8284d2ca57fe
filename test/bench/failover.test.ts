// Smoke test of `npm run bench -- failover` at a tiny size: the JSON has every documented field,
// the leader really changed, and the failover lost and doubled nothing (no timing targets here).
import { describe, expect, it } from 'vitest';
import { runBench } from './helpers/run-bench.js';

describe('bench failover (tiny)', () => {
  it('kills the leader under load; reports new-leader time and fire gap; lost = doubled = 0', { timeout: 120_000 }, async () => {
    const r = await runBench('failover', ['--jobs', '20', '--warmup-seconds', '1', '--before-seconds', '2', '--after-seconds', '4'], 110_000);
    expect(r.bench).toBe('failover');
    expect(r.newLeader).not.toBe(r.killed);
    expect(r.newLeaderMs).toBeGreaterThan(0);
    expect(Number.isFinite(r.fireGapMs)).toBe(true);
    for (const k of ['latenessMs', 'latenessDeliveredBeforeKillMs', 'latenessDeliveredAfterKillMs']) {
      expect(Object.keys(r[k]).sort()).toEqual(['max', 'p50', 'p99']);
    }
    expect(r.latenessMs.p50).toBeLessThanOrEqual(r.latenessMs.max);
    // 20 jobs x 6 s window: every slot accounted for, none twice.
    expect(r.slots + r.missed + r.notStarted).toBe(20 * 6);
    expect(r.lost).toBe(0);
    expect(r.doubled).toBe(0);
    expect(typeof r.targets.newLeaderMet).toBe('boolean');
  });
});
