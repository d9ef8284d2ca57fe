// The watch streams' metrics on the node's registry: streams open by kind, events sent, streams
// cut by reason, and the change log's size and floor (how far back a watch can resume here).
// Gauges are read at scrape time from the service and the log, so nothing on the apply path
// touches them.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ChangeLog } from './change-log.js';

export type WatchKind = 'runs' | 'jobs';
/** too_slow: backlog past its bound; dropped: the ring dropped changes it had not sent; shutting_down: the node stops. */
export type CutReason = 'too_slow' | 'dropped' | 'shutting_down';

/** What one watcher reports. */
export interface WatcherStats {
  sent(events: number): void;
  cut(reason: CutReason): void;
}

export interface WatchMetrics {
  /** The stats of one watcher of `kind`. */
  watcher(kind: WatchKind): WatcherStats;
}

export function createWatchMetrics(registry: Registry, log: ChangeLog, open: () => Iterable<WatchKind>): WatchMetrics {
  const reg = { registers: [registry] };
  new Gauge({
    name: 'herald_watchers',
    help: 'Watch streams open on this node, by kind (runs, jobs)',
    labelNames: ['kind'] as const,
    ...reg,
    collect() {
      const n = { runs: 0, jobs: 0 };
      for (const k of open()) n[k]++;
      this.set({ kind: 'runs' }, n.runs);
      this.set({ kind: 'jobs' }, n.jobs);
    },
  });
  const events = new Counter({ name: 'herald_watch_events_sent_total', help: 'Watch events sent by this node, by kind', labelNames: ['kind'] as const, ...reg });
  const cuts = new Counter({
    name: 'herald_watchers_cut_total',
    help: 'Watch streams this node ended, by reason (too_slow, dropped, shutting_down)',
    labelNames: ['reason'] as const,
    ...reg,
  });
  new Gauge({
    name: 'herald_watch_log_events',
    help: "Changes held in this node's watch change log",
    ...reg,
    collect() {
      this.set(log.size);
    },
  });
  new Gauge({
    name: 'herald_watch_log_floor_index',
    help: "The oldest applied index a watch can resume from on this node (its change log's floor)",
    ...reg,
    collect() {
      this.set(log.floor);
    },
  });
  return {
    watcher: (kind) => ({
      sent: (n) => events.inc({ kind }, n),
      cut: (reason) => cuts.inc({ reason }),
    }),
  };
}
