// nextSlotAfter throughput for representative specs, printed as one JSON line.
// Run: npx tsx bench/schedule-next-slot.ts
// Each case chains nextSlotAfter from the slot it just returned (as the FSM does after a fire),
// after a warm-up that also fills the zone-transition tables. coldFirstCallMs_* are the first calls
// in a zone not used before (they build that zone's transition tables).
import {
  DstFoldPolicy,
  DstGapPolicy,
  MisfirePolicy,
  OverlapPolicy,
  type JobSpec,
  type Schedule,
} from '../src/gen/herald/v1/job.js';
import { jitterOffsetMs, nextSlotAfter, retryBackoffMs, ScheduleCaches } from '../src/fsm/schedule/index.js';

// Parsed expressions and zone rules (a cache: results never depend on it).
const caches = new ScheduleCaches();

function spec(kind: Schedule['kind']): JobSpec {
  return {
    taskType: 'bench', payload: Buffer.alloc(0), schedule: { kind }, startUnixMs: 0, endUnixMs: 0, retry: undefined,
    executionTimeoutMs: 0, leaseDurationMs: 0, misfirePolicy: MisfirePolicy.MISFIRE_POLICY_UNSPECIFIED, misfireMaxRuns: 0,
    startingDeadlineMs: 0, overlapPolicy: OverlapPolicy.OVERLAP_POLICY_UNSPECIFIED, jitterMs: 0,
    dst: { gap: DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD, fold: DstFoldPolicy.DST_FOLD_POLICY_FIRST, foldAuto: false },
    retention: undefined, labels: {}, priority: 0, maxPendingRuns: 0, alerts: undefined, pauseAfterDead: 0,
  };
}
const cron = (expression: string, timeZone = '') => spec({ $case: 'cron', cron: { expression, timeZone } });

const START = Date.UTC(2026, 0, 1);
const cases: Record<string, JobSpec> = {
  every_minute_utc: cron('* * * * *'),
  every_second_6f_utc: cron('* * * * * *'),
  every_15min_new_york: cron('*/15 * * * *', 'America/New_York'),
  weekdays_0930_berlin: cron('30 9 * * MON-FRI', 'Europe/Berlin'),
  hourly_lord_howe: cron('0 * * * *', 'Australia/Lord_Howe'),
  leap_day_berlin: cron('0 0 29 2 *', 'Europe/Berlin'),
  day_31_utc: cron('0 0 31 * *'),
  every_90s: spec({ $case: 'every', every: { intervalMs: 90_000, anchorUnixMs: START } }),
  at_one_off: spec({ $case: 'at', at: { atUnixMs: START + 1000 } }),
};

function opsPerSec(fn: () => void, minMs = 300): number {
  let n = 0;
  const t0 = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < 1000; i++) fn();
    n += 1000;
    elapsed = performance.now() - t0;
  }
  return Math.round((n / elapsed) * 1000);
}

const result: Record<string, number> = {};
// Cold cost: the first call in a zone builds its offset-transition tables (per UTC year, cached).
for (const zone of ['America/Chicago', 'Europe/London', 'Asia/Tokyo']) {
  const t0 = performance.now();
  nextSlotAfter(cron('0 9 * * *', zone), START, START, caches);
  result[`coldFirstCallMs_${zone.replace('/', '_')}`] = Math.round((performance.now() - t0) * 100) / 100;
}
for (const [name, s] of Object.entries(cases)) {
  let t = START;
  const step = () => {
    const next = nextSlotAfter(s, t, START, caches);
    t = next === undefined || next > START + 50 * 365 * 86_400_000 ? START : next;
  };
  for (let i = 0; i < 20_000; i++) step(); // warm-up: JIT and zone tables
  t = START;
  result[`nextSlotAfter_${name}`] = opsPerSec(step);
}
let slot = START;
result.jitterOffsetMs = opsPerSec(() => {
  slot += 60_000;
  jitterOffsetMs('billing.nightly-report', slot, 600_000, slot + 60_000);
});
let attempt = 2;
result.retryBackoffMs = opsPerSec(() => {
  attempt = attempt > 20 ? 2 : attempt + 1;
  retryBackoffMs(undefined, attempt, 'billing.nightly-report:1780000000000');
});
console.log(JSON.stringify({ bench: 'schedule-next-slot', unit: 'ops/s', node: process.version, ...result }));
