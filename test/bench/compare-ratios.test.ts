// The compare bench's arithmetic, as a pure unit: which fields of our and the peers' JSON pair up,
// ratios ours / peer, and medians over rounds.
import { describe, expect, it } from 'vitest';
import { herdVsBullmq, median, raftVsEtcd, ratio, steadyVsBullmqSched, summarizeRounds } from '../../bench/lib/compare-ratios.js';

const puts = (c1: number, c64: number, p99: number) => ({
  seq_puts: { ops_per_s: c1, lat_ms: { p50: 1, p99: 2 } },
  conc_puts: { ops_per_s: c64, lat_ms: { p50: 10, p99 } },
});

describe('compare ratios', () => {
  it('median of odd and even counts, ignoring non-finite values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([NaN, 5])).toBe(5);
    expect(median([])).toBeNaN();
  });

  it('ratio is ours / peer, NaN when the peer figure is 0 or missing', () => {
    expect(ratio(9450, 4725)).toBe(2);
    expect(ratio(1, 3)).toBe(0.333);
    expect(ratio(1, 0)).toBeNaN();
    expect(ratio(1, NaN)).toBeNaN();
  });

  it('raft-commit vs etcd: throughput and latency at concurrency 64 and 1', () => {
    const f = raftVsEtcd(puts(500, 9000, 20), puts(1000, 4500, 40));
    expect(f.c64OpsPerSec).toEqual({ ours: 9000, peer: 4500, better: 'higher' });
    expect(f.c64P99Ms).toEqual({ ours: 20, peer: 40, better: 'lower' });
    expect(f.c1OpsPerSec).toEqual({ ours: 500, peer: 1000, better: 'higher' });
  });

  it('herd vs BullMQ: drain rate from runs / drain time, lateness from handler start', () => {
    const ours = { runs: 100_000, createMs: 10_000, drainMs: 5_000, startLatenessMs: { p50: 100, p99: 4000, max: 4900 } };
    const peer = { add_jobs_per_s: 22_000, drain_jobs_per_s: 15_000, lateness_ms: { p50: 3768, p99: 6575, max: 6625 } };
    const f = herdVsBullmq(ours, peer);
    expect(f.drainJobsPerSec).toEqual({ ours: 20_000, peer: 15_000, better: 'higher' });
    expect(f.createJobsPerSec!.ours).toBe(10_000);
    expect(f.latenessP99Ms).toEqual({ ours: 4000, peer: 6575, better: 'lower' });
  });

  it('steady vs BullMQ schedulers compares lateness as the worker saw it', () => {
    const f = steadyVsBullmqSched({ latenessMs: { p50: 20, p99: 40, max: 90 } }, { lateness_ms: { p50: 129, p99: 384, max: 391 } });
    expect(f.latenessP99Ms).toEqual({ ours: 40, peer: 384, better: 'lower' });
  });

  it('summarizes rounds as medians, the ratio taken of the medians', () => {
    const rounds = [raftVsEtcd(puts(1, 9000, 20), puts(1, 4500, 30)), raftVsEtcd(puts(1, 6000, 40), puts(1, 5000, 30)), raftVsEtcd(puts(1, 8000, 10), puts(1, 4000, 30))];
    const s = summarizeRounds(rounds);
    expect(s.c64OpsPerSec).toEqual({ ours: 8000, peer: 4500, better: 'higher', ratio: 1.778, rounds: 3 });
    expect(s.c64P99Ms).toMatchObject({ ours: 20, peer: 30, ratio: 0.667 });
    // A round missing a metric (a failed run) does not count for it.
    expect(summarizeRounds([{ a: { ours: 2, peer: 1, better: 'higher' } }, {}]).a).toMatchObject({ ratio: 2, rounds: 1 });
  });
});
