// Smoke test of `npm run bench -- scale` at a tiny size: every phase runs (create, restart to
// SERVING, due-window reads, snapshot install) and the JSON has its documented fields.
import { describe, expect, it } from 'vitest';
import { runBench } from './helpers/run-bench.js';

describe('bench scale (tiny)', () => {
  it('stores N jobs, restarts to SERVING, reads due windows, installs a snapshot on a follower', { timeout: 150_000 }, async () => {
    const args = ['--jobs', '2000', '--batch', '500', '--snapshot-entries', '300', '--compaction-keep', '50', '--install-timeout-seconds', '30'];
    const r = await runBench('scale', args, 140_000);
    expect(r.bench).toBe('scale');
    expect(r.jobs).toBe(2000);
    expect(r.createJobsPerSec).toBeGreaterThan(0);
    expect(r.leaderRssMiB.rss).toBeGreaterThan(0);
    expect(r.diskMiB).toBeGreaterThan(0);
    // Every job fires daily within 24 h; a 60 s window holds ~N/1440 of them.
    expect(r.dueWindow.firstWindowSlots).toBeGreaterThan(0);
    expect(Object.keys(r.dueWindow.randomMs).sort()).toEqual(['max', 'p50', 'p99']);
    // The restart was from a snapshot, and every node came back to SERVING with a linearizable read.
    expect(r.snapshotIndex).toBeGreaterThan(0);
    // Issue 34's ten-million targets are judged only on a ten-million run.
    expect(r.targetsTenMillion).toBeNull();
    for (const k of ['listeningMs', 'firstServingMs', 'allServingMs', 'linearizableReadMs']) expect(r.restart[k]).toBeGreaterThan(0);
    const lag = r.snapshotInstall.laggingFollower;
    expect(lag.caughtUp).toBe(true);
    expect(lag.followerHasData).toBe(true);
    expect(lag.followerSnapshotIndex).toBeGreaterThan(lag.fromApplied);
    // The wiped follower, replaced the operator's way (removed, --join, added), is caught up too.
    const wiped = r.snapshotInstall.wipedFollower;
    expect(wiped.caughtUp).toBe(true);
    expect(wiped.followerHasData).toBe(true);
  });
});
