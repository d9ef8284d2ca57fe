// Small builders for JobSpecs in schedule-math tests (only the fields the schedule math reads).
import {
  DstFoldPolicy,
  DstGapPolicy,
  MisfirePolicy,
  OverlapPolicy,
  type JobSpec,
  type Schedule,
} from '../../../src/gen/herald/v1/job.js';

export function jobSpec(schedule: Schedule['kind'], overrides: Partial<JobSpec> = {}): JobSpec {
  return {
    taskType: 'test',
    payload: Buffer.alloc(0),
    schedule: { kind: schedule },
    startUnixMs: 0,
    endUnixMs: 0,
    retry: undefined,
    executionTimeoutMs: 0,
    leaseDurationMs: 0,
    misfirePolicy: MisfirePolicy.MISFIRE_POLICY_UNSPECIFIED,
    misfireMaxRuns: 0,
    startingDeadlineMs: 0,
    overlapPolicy: OverlapPolicy.OVERLAP_POLICY_UNSPECIFIED,
    jitterMs: 0,
    dst: undefined,
    retention: undefined,
    labels: {},
    priority: 0,
    maxPendingRuns: 0,
    alerts: undefined,
    pauseAfterDead: 0,
    ...overrides,
  };
}

export type Gap = 'shift' | 'skip' | 'unspecified';
export type Fold = 'first' | 'last' | 'both' | 'auto' | 'unspecified';

const GAP: Record<Gap, DstGapPolicy> = {
  shift: DstGapPolicy.DST_GAP_POLICY_SHIFT_FORWARD,
  skip: DstGapPolicy.DST_GAP_POLICY_SKIP,
  unspecified: DstGapPolicy.DST_GAP_POLICY_UNSPECIFIED,
};
const FOLD: Record<Fold, DstFoldPolicy> = {
  first: DstFoldPolicy.DST_FOLD_POLICY_FIRST,
  last: DstFoldPolicy.DST_FOLD_POLICY_LAST,
  both: DstFoldPolicy.DST_FOLD_POLICY_BOTH,
  auto: DstFoldPolicy.DST_FOLD_POLICY_AUTO,
  unspecified: DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED,
};

export function cronSpec(
  expression: string,
  timeZone = '',
  gap: Gap = 'unspecified',
  fold: Fold = 'unspecified',
  overrides: Partial<JobSpec> = {},
): JobSpec {
  return jobSpec({ $case: 'cron', cron: { expression, timeZone } }, { dst: { gap: GAP[gap], fold: FOLD[fold], foldAuto: false }, ...overrides });
}

export function everySpec(intervalMs: number, anchorUnixMs = 0, overrides: Partial<JobSpec> = {}): JobSpec {
  return jobSpec({ $case: 'every', every: { intervalMs, anchorUnixMs } }, overrides);
}

export function atSpec(atUnixMs: number, overrides: Partial<JobSpec> = {}): JobSpec {
  return jobSpec({ $case: 'at', at: { atUnixMs } }, overrides);
}

/** ISO 8601 with an explicit offset, e.g. "2026-03-08T03:00:00-04:00", to epoch ms. */
export const ms = (iso: string): number => {
  const v = Date.parse(iso);
  if (Number.isNaN(v)) throw new Error(`bad date in test: ${iso}`);
  return v;
};

/** Renders instants as wall time with offset in a zone, for readable failure diffs. */
export function wall(instants: readonly number[], timeZone: string): string[] {
  const f = new Intl.DateTimeFormat('sv-SE', {
    timeZone: timeZone || 'UTC',
    year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
    timeZoneName: 'longOffset',
  });
  return instants.map((t) => {
    const [date, time, zone] = f.format(t).split(' ') as [string, string, string];
    const offset = zone === 'GMT' ? '+00:00' : zone.replace('GMT', '').replace('\u2212', '-');
    return `${date}T${time}${offset}`;
  });
}
