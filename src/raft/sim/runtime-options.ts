// The driver's runtime options, drawn per seed like the faults (fault-plan.ts): every
// combination production can run with is explored, not only the defaults.

import type { Prng } from './prng.js';

export interface RuntimeOptions {
  /** A follower gathers committed entries this long (simulated ms) before applying them. */
  followerApplyWindowMs: number;
  /** Effects replication: the leader ships its writes, followers write them instead of evaluating. */
  replicateEffects: boolean;
  /** The state machine answers before its batch is written (the LevelDB KV machine's write-behind). */
  writeBehind: boolean;
  /** What triggers a snapshot and compaction: a count of applied entries, or their bytes. */
  snapshotBy: 'entries' | 'bytes';
  snapshotEntries: number;
  snapshotBytes: number;
  compactionKeepEntries: number;
  compactionKeepBytes: number;
  /** Disk writes land 0..ioMaxDelay units after they are issued. */
  ioMaxDelay: number;
  /** Probability that one disk read or write fails (0 in the liveness phase). */
  ioErrorRate: number;
}

/** A put command is about 12 bytes (kv-command.ts). */
const BYTES_PER_ENTRY = 12;

export function drawRuntimeOptions(rng: Prng, calm: boolean): RuntimeOptions {
  const snapshotBy = rng.chance(0.5) ? 'entries' : 'bytes';
  const every = rng.int(4, 40);
  const keep = rng.int(0, Math.min(every, 8));
  return {
    followerApplyWindowMs: rng.pick([0, 0, 2, 5, 20]),
    replicateEffects: rng.chance(0.5),
    writeBehind: rng.chance(0.5),
    snapshotBy,
    snapshotEntries: snapshotBy === 'entries' ? every : 1_000_000,
    snapshotBytes: snapshotBy === 'bytes' ? every * BYTES_PER_ENTRY : 1 << 30,
    compactionKeepEntries: snapshotBy === 'entries' ? keep : 1_000_000,
    compactionKeepBytes: snapshotBy === 'bytes' ? keep * BYTES_PER_ENTRY : 1 << 30,
    ioMaxDelay: rng.pick([0, 1, 2, 4]),
    ioErrorRate: calm ? 0 : rng.pick([0, 0, 0.001, 0.005, 0.02]),
  };
}
