// The watch metrics on a node's registry (watch-metrics.ts), driven through the WatchService
// implementation with fake streams: streams open by kind, events sent, cuts by reason, and the
// change log's size and floor.
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { encodeRunRecord } from '../../src/fsm/store/records.js';
import { Run, RunState } from '../../src/gen/herald/v1/run.js';
import { createNodeMetrics } from '../../src/server/node/metrics.js';
import { ChangeLog } from '../../src/server/watch/change-log.js';
import { createWatchService } from '../../src/server/watch/watch-service.js';

const run = (id: string) => encodeRunRecord({ run: Run.fromPartial({ id, jobId: 'j1', taskType: 'report', state: RunState.RUN_STATE_RUNNING, attempt: 1 }), held: false });

/** Enough of a grpc-js server stream for the watch service. */
class FakeCall extends EventEmitter {
  cancelled = false;
  accept = true;
  writes = 0;
  error: unknown;
  constructor(readonly request: object) {
    super();
    this.on('error', (e) => void (this.error = e));
  }
  write(): boolean {
    this.writes++;
    return this.accept;
  }
  destroy(): void {}
}

const tick = () => new Promise((r) => setImmediate(r));

async function metric(registry: { getSingleMetricAsString(name: string): Promise<string> }, name: string): Promise<string> {
  return registry.getSingleMetricAsString(name);
}

describe('watch metrics', () => {
  it('count streams by kind, events sent, cuts by reason, and show the change log’s size and floor', async () => {
    const m = createNodeMetrics({ nodeId: 'n1' }, { defaultMetrics: false });
    const log = new ChangeLog(0, { maxEvents: 4 });
    const svc = createWatchService({ log, readIndex: async () => 0, jobsWithLabels: async () => [], logger: pino({ level: 'silent' }), metrics: m, limits: { maxBacklog: 2, messageBytes: 1 } });
    const runsReq = { jobId: '', taskType: '', states: [], labels: {}, fromIndex: 0 };
    const fast = new FakeCall(runsReq);
    const slow = new FakeCall(runsReq);
    const jobs = new FakeCall({ jobId: '', taskType: '', labels: {}, fromIndex: 0 });
    svc.implementation.watchRuns!(fast as never, undefined as never);
    svc.implementation.watchRuns!(slow as never, undefined as never);
    svc.implementation.watchJobs!(jobs as never, undefined as never);
    await tick();
    expect(svc.watchers).toBe(3);
    expect(await metric(m.registry, 'herald_watchers')).toContain('herald_watchers{kind="runs",node="n1"} 2');
    expect(await metric(m.registry, 'herald_watchers')).toContain('herald_watchers{kind="jobs",node="n1"} 1');

    // Two run changes reach both run watchers (the slow one's write is refused after it is queued).
    slow.accept = false;
    log.append(1, [run('j1@1'), run('j1@2')], []);
    await tick();
    expect(await metric(m.registry, 'herald_watch_events_sent_total')).toContain('herald_watch_events_sent_total{kind="runs",node="n1"} 4');
    // Three more: the slow watcher is 3 behind (bound 2) and is cut; the ring (4) drops the first batch.
    log.append(2, [run('j1@3'), run('j1@4'), run('j1@5')], []);
    await tick();
    expect(await metric(m.registry, 'herald_watchers_cut_total')).toContain('herald_watchers_cut_total{reason="too_slow",node="n1"} 1');
    expect(svc.watchers).toBe(2);
    expect(await metric(m.registry, 'herald_watch_events_sent_total')).toContain('herald_watch_events_sent_total{kind="runs",node="n1"} 7');
    expect(slow.error).toBeDefined();
    expect(await metric(m.registry, 'herald_watch_log_events')).toContain('herald_watch_log_events{node="n1"} 3');
    expect(await metric(m.registry, 'herald_watch_log_floor_index')).toContain('herald_watch_log_floor_index{node="n1"} 1');

    svc.close();
    expect(await metric(m.registry, 'herald_watchers_cut_total')).toContain('herald_watchers_cut_total{reason="shutting_down",node="n1"} 2');
    expect(await metric(m.registry, 'herald_watchers')).toContain('herald_watchers{kind="runs",node="n1"} 0');
  });
});
