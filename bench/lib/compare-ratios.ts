// Pairs our bench results with the peers' (../shared/peers) on the same metric definitions and
// computes ratios, as medians over rounds. Pure: the compare bench feeds it the JSON lines.
// Every ratio is ours / peer: above 1 is better for throughput, below 1 is better for latency.

/** One metric of one pair: which direction is better decides how a reader reads the ratio. */
export interface MetricPair {
  ours: number;
  peer: number;
  better: 'higher' | 'lower';
}
export type PairFigures = Record<string, MetricPair>;

export interface MetricSummary extends MetricPair {
  /** median(ours) / median(peer) over the rounds. */
  ratio: number;
  rounds: number;
}

export function median(xs: readonly number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function ratio(ours: number, peer: number): number {
  if (!Number.isFinite(ours) || !Number.isFinite(peer) || peer === 0) return NaN;
  return +(ours / peer).toFixed(3);
}

// ---- the result shapes we read (only the fields used)

type Lat = { p50: number; p99: number; max?: number };
export interface PutsPhase {
  ops_per_s: number;
  lat_ms: Lat;
}
/** bench/raft-commit.ts and peers' etcd-bench.mjs share this shape. */
export interface PutsResult {
  seq_puts: PutsPhase;
  conc_puts: PutsPhase;
}
export interface OurHerd {
  runs: number;
  createMs: number;
  drainMs: number;
  startLatenessMs: Required<Lat>;
}
export interface PeerHerd {
  add_jobs_per_s: number;
  drain_jobs_per_s: number;
  lateness_ms: Required<Lat>;
}
export interface OurSteady {
  /** Handler start (assignment receipt in the worker) − slot time. */
  latenessMs: Required<Lat>;
}
export interface PeerSched {
  lateness_ms: Required<Lat>;
}

const hi = (ours: number, peer: number): MetricPair => ({ ours, peer, better: 'higher' });
const lo = (ours: number, peer: number): MetricPair => ({ ours, peer, better: 'lower' });

/** raft-commit vs etcd: 256-byte puts at concurrency 64 and 1. */
export function raftVsEtcd(ours: PutsResult, etcd: PutsResult): PairFigures {
  return {
    c64OpsPerSec: hi(ours.conc_puts.ops_per_s, etcd.conc_puts.ops_per_s),
    c64P50Ms: lo(ours.conc_puts.lat_ms.p50, etcd.conc_puts.lat_ms.p50),
    c64P99Ms: lo(ours.conc_puts.lat_ms.p99, etcd.conc_puts.lat_ms.p99),
    c1OpsPerSec: hi(ours.seq_puts.ops_per_s, etcd.seq_puts.ops_per_s),
    c1P50Ms: lo(ours.seq_puts.lat_ms.p50, etcd.seq_puts.lat_ms.p50),
    c1P99Ms: lo(ours.seq_puts.lat_ms.p99, etcd.seq_puts.lat_ms.p99),
  };
}

/** herd vs BullMQ's herd: N one-offs due at one instant; lateness = handler start − instant. */
export function herdVsBullmq(ours: OurHerd, peer: PeerHerd): PairFigures {
  return {
    drainJobsPerSec: hi(ours.runs / (ours.drainMs / 1000), peer.drain_jobs_per_s),
    createJobsPerSec: hi(ours.runs / (ours.createMs / 1000), peer.add_jobs_per_s),
    latenessP50Ms: lo(ours.startLatenessMs.p50, peer.lateness_ms.p50),
    latenessP99Ms: lo(ours.startLatenessMs.p99, peer.lateness_ms.p99),
    latenessMaxMs: lo(ours.startLatenessMs.max, peer.lateness_ms.max),
  };
}

/** steady (jobs every second) vs BullMQ job schedulers (every 1000 ms): lateness = start − slot. */
export function steadyVsBullmqSched(ours: OurSteady, peer: PeerSched): PairFigures {
  return {
    latenessP50Ms: lo(ours.latenessMs.p50, peer.lateness_ms.p50),
    latenessP99Ms: lo(ours.latenessMs.p99, peer.lateness_ms.p99),
    latenessMaxMs: lo(ours.latenessMs.max, peer.lateness_ms.max),
  };
}

/** Medians of each metric over rounds (rounds may miss a metric when a run failed). */
export function summarizeRounds(rounds: readonly PairFigures[]): Record<string, MetricSummary> {
  const names = [...new Set(rounds.flatMap((r) => Object.keys(r)))];
  const out: Record<string, MetricSummary> = {};
  for (const name of names) {
    const got = rounds.map((r) => r[name]).filter((m): m is MetricPair => m !== undefined);
    const ours = median(got.map((m) => m.ours));
    const peer = median(got.map((m) => m.peer));
    const r2 = (x: number) => (Number.isFinite(x) ? +x.toFixed(2) : NaN);
    out[name] = { ours: r2(ours), peer: r2(peer), better: got[0]!.better, ratio: ratio(ours, peer), rounds: got.length };
  }
  return out;
}
