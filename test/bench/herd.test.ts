// Smoke test of `npm run bench -- herd` at a tiny size: the JSON has every documented field and
// every run of the herd started once, was accepted once and none was lost (no timing targets here).
import { describe, expect, it } from 'vitest';
import { runBench } from './helpers/run-bench.js';

describe('bench herd (tiny)', () => {
  it('drains a herd of one-off jobs through Worker-library processes; lost = doubled = 0', { timeout: 120_000 }, async () => {
    const r = await runBench('herd', ['--runs', '300', '--workers', '2', '--capacity', '50'], 110_000);
    expect(r.bench).toBe('herd');
    expect(r.createdBeforeInstant).toBe(true);
    expect(r.succeeded).toBe(300);
    expect(r.started).toBe(300);
    expect(r.resultsAccepted).toBe(300);
    expect(r.resultsRefused).toBe(0);
    expect(r.lost).toBe(0);
    expect(r.doubled).toBe(0);
    expect(r.drainMs).toBeGreaterThan(0);
    expect(Object.keys(r.latenessMs).sort()).toEqual(['max', 'p50', 'p99']);
    expect(r.latenessMs.p50).toBeLessThanOrEqual(r.latenessMs.max);
    expect(r.drainCpuUsPerRun.followers).toHaveLength(2);
  });
});
