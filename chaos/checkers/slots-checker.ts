// Slots (I1, I2, I3 as the ledger sees them): for every slot of every workload job up to the end
// of the checked window —
// - lost: a slot with no run record (no run, no SKIPPED/MISSED record) while the job was
//   certainly active;
// - unexpected: a run for a slot that should not exist (the job was certainly paused, the slot is
//   not on the schedule or past its end), or an effect for a run that never executes (SKIPPED,
//   MISSED) or for a deleted job's slot after the delete returned;
// - duplicateEffects: more than one applied effect for one (job, slot), or an effect replayed by
//   an execution the run's history cannot explain (a slot fired twice);
// - early: a handler started before its slot plus jitter;
// - notTerminal: a run in the window still not terminal after the settle wait;
// - missingEffects: a SUCCEEDED run with no effect in the ledger (a success from nowhere).
// Pause/resume/delete calls give uncertainty windows (call − margin .. return + margin): slots
// there may go either way. Wall clocks of the orchestrator, workers and ledger are the same
// machine's; margin absorbs cluster-time vs wall-time differences.
import { RunState, type Run } from '../../src/gen/herald/v1/run.js';
import { slotsInRange, ScheduleCaches } from '../../src/fsm/schedule/index.js';
import type { EffectRecord, LedgerSnapshot } from '../ledger/ledger-state.js';
import type { JobTimeline } from '../workload/job-timeline.js';
import { causeOf } from './fencing-checker.js';
import { percentile, within, type Interval } from './interval-set.js';


export interface SlotsCheckInput {
  jobs: readonly JobTimeline[];
  /** Every run of every job still present at the end; a job missing here was deleted (or lost). */
  runsByJob: ReadonlyMap<string, readonly Run[]>;
  ledger: LedgerSnapshot;
  /** Slots at or before this instant must be accounted for. */
  windowEndMs: number;
  marginMs?: number;
  earlyToleranceMs?: number;
}

export interface SlotsCheckResult {
  ok: boolean;
  jobsChecked: number;
  slotsChecked: number;
  lost: number;
  duplicateEffects: number;
  unexpected: number;
  early: number;
  notTerminal: number;
  missingEffects: number;
  runsByState: Record<string, number>;
  latenessMs: { p50: number; p99: number; max: number; samples: number };
  problems: string[];
}

export const TERMINAL = new Set([
  RunState.RUN_STATE_SUCCEEDED,
  RunState.RUN_STATE_DEAD,
  RunState.RUN_STATE_CANCELLED,
  RunState.RUN_STATE_SKIPPED,
  RunState.RUN_STATE_MISSED,
]);

const NEVER_EXECUTED = new Set([RunState.RUN_STATE_SKIPPED, RunState.RUN_STATE_MISSED]);

function isScheduledRunId(id: string): boolean {
  return !id.includes('~');
}

/** Maybe-paused (excused) and certainly-paused (forbidden) intervals of a job. */
export function pauseWindows(t: JobTimeline, marginMs: number): { excused: Interval[]; forbidden: Interval[] } {
  const excused: Interval[] = [];
  const forbidden: Interval[] = [];
  const evs = [...t.events].filter((e) => e.ok || e.returnMs === Infinity).sort((a, b) => a.callMs - b.callMs);
  for (let i = 0; i < evs.length; i++) {
    const e = evs[i]!;
    if (e.type === 'delete') {
      excused.push({ from: e.callMs - marginMs, to: Infinity });
      continue;
    }
    if (e.type !== 'pause') continue;
    const resume = evs.slice(i + 1).find((x) => x.type === 'resume');
    // An unknown-outcome resume may never have applied: the job may be paused to the end.
    const excusedTo = !resume || resume.returnMs === Infinity ? Infinity : resume.returnMs + marginMs;
    excused.push({ from: e.callMs - marginMs, to: excusedTo });
    if (e.ok && e.returnMs !== Infinity) {
      forbidden.push({ from: e.returnMs + marginMs, to: resume ? resume.callMs - marginMs : Infinity });
    }
  }
  return { excused, forbidden };
}

export function checkSlots(input: SlotsCheckInput): SlotsCheckResult {
  const caches = new ScheduleCaches();
  const margin = input.marginMs ?? 2_000;
  const earlyTolerance = input.earlyToleranceMs ?? 50;
  const problems: string[] = [];
  const note = (p: string) => {
    if (problems.length < 30) problems.push(p);
  };
  let slotsChecked = 0;
  let lost = 0;
  let unexpected = 0;
  let early = 0;
  let notTerminal = 0;
  let missingEffects = 0;
  let duplicateEffects = 0;
  const runsByState: Record<string, number> = {};
  const lateness: number[] = [];

  const byJob = <T extends EffectRecord>(recs: readonly T[]) => {
    const m = new Map<string, T[]>();
    for (const r of recs) {
      let g = m.get(r.jobId);
      if (!g) m.set(r.jobId, (g = []));
      g.push(r);
    }
    return m;
  };
  const effectsByJob = byJob(input.ledger.effects);
  const replaysByJob = byJob(input.ledger.replays);
  const invocationsByJob = byJob(input.ledger.invocations);

  for (const job of input.jobs) {
    const effects = effectsByJob.get(job.jobId) ?? [];
    const invocations = invocationsByJob.get(job.jobId) ?? [];
    const { excused, forbidden } = pauseWindows(job, margin);

    // Duplicate effects: one applied effect per (job, slot) of scheduled runs.
    const perSlot = new Map<number, number>();
    for (const e of effects) if (isScheduledRunId(e.runId)) perSlot.set(e.slotMs, (perSlot.get(e.slotMs) ?? 0) + 1);
    for (const [slot, n] of perSlot) {
      if (n > 1) {
        duplicateEffects += n - 1;
        note(`${job.jobId}@${slot}: ${n} applied effects`);
      }
    }

    const runs = input.runsByJob.get(job.jobId);
    if (runs === undefined) {
      // Deleted (or lost). Without its runs only the ledger speaks: nothing may take effect for a
      // slot after the delete returned.
      const del = job.events.find((e) => e.type === 'delete' && (e.ok || e.returnMs === Infinity));
      if (!del) {
        const expected = slotsInRange(job.spec, job.createdUnixMs + margin, input.windowEndMs + 1, job.createdUnixMs, 100_000, caches);
        lost += expected.length;
        note(`${job.jobId}: the job is gone without a delete; its ${expected.length} slots are lost`);
        continue;
      }
      const deadline = del.returnMs === Infinity ? Infinity : del.returnMs + margin;
      for (const e of effects) {
        if (e.slotMs > deadline) {
          unexpected++;
          note(`${e.runId}: effect for a slot after the job's delete returned`);
        }
      }
      continue;
    }

    const runById = new Map(runs.map((r) => [r.id, r]));
    const scheduled = runs.filter((r) => isScheduledRunId(r.id));
    const bySlot = new Map(scheduled.map((r) => [r.slotUnixMs, r]));
    const maxRunSlot = Math.max(input.windowEndMs, ...scheduled.map((r) => r.slotUnixMs));
    const onSchedule = new Set(slotsInRange(job.spec, job.createdUnixMs, maxRunSlot + 1, job.createdUnixMs, 1_000_000, caches));
    const uncertain = (s: number) => s <= job.createdUnixMs + margin || within(s, excused);

    for (const s of onSchedule) {
      if (s > input.windowEndMs) continue;
      const run = bySlot.get(s);
      if (!run) {
        if (!uncertain(s)) {
          lost++;
          note(`${job.jobId}@${s}: no run and no record (job ${job.kind})`);
        }
        continue;
      }
      slotsChecked++;
    }
    for (const run of runs) {
      const state = RunState[run.state] ?? String(run.state);
      runsByState[state] = (runsByState[state] ?? 0) + 1;
      const sched = isScheduledRunId(run.id);
      if (sched && !onSchedule.has(run.slotUnixMs)) {
        unexpected++;
        note(`${run.id}: not a slot of the job's schedule (or past its end)`);
      } else if (sched && within(run.slotUnixMs, forbidden) && run.slotUnixMs > job.createdUnixMs + margin) {
        unexpected++;
        note(`${run.id}: fired while the job was certainly paused`);
      }
      if (run.slotUnixMs <= input.windowEndMs && !TERMINAL.has(run.state)) {
        notTerminal++;
        note(`${run.id}: still ${state} after the settle wait`);
      }
      if (run.state === RunState.RUN_STATE_SUCCEEDED && !effects.some((e) => e.runId === run.id)) {
        missingEffects++;
        note(`${run.id}: SUCCEEDED without an effect in the ledger`);
      }
    }
    for (const e of effects) {
      const run = runById.get(e.runId);
      if (run && NEVER_EXECUTED.has(run.state)) {
        unexpected++;
        note(`${e.runId}: effect for a run recorded ${RunState[run.state]}`);
      } else if (!run && e.slotMs <= input.windowEndMs) {
        unexpected++;
        note(`${e.runId}: effect for a run the cluster does not have`);
      }
    }
    // A replay is fine after a lost lease (the first holder wrote, then died); by an execution
    // the history cannot explain, it is a second effect that only the sink's idempotency hid.
    for (const r of replaysByJob.get(job.jobId) ?? []) {
      const run = runById.get(r.runId);
      const idx = run ? run.attempts.findIndex((a) => a.fencingToken === r.fencingToken) : -1;
      if (!run || idx <= 0 || causeOf(run, idx) === 'unexplained') {
        duplicateEffects++;
        note(`${r.runId}: effect replayed by token ${r.fencingToken}, an execution its history does not explain`);
      }
    }

    const firstStart = new Map<string, number>();
    for (const inv of invocations) {
      const run = runById.get(inv.runId);
      const scheduledMs = run?.scheduledUnixMs ?? inv.scheduledMs ?? inv.slotMs;
      if (inv.startedMs < scheduledMs - earlyTolerance) {
        early++;
        note(`${inv.runId}: handler started ${scheduledMs - inv.startedMs} ms before its scheduled time`);
      }
      firstStart.set(inv.runId, Math.min(firstStart.get(inv.runId) ?? Infinity, inv.startedMs - scheduledMs));
    }
    lateness.push(...firstStart.values());
  }

  return {
    ok: lost === 0 && duplicateEffects === 0 && unexpected === 0 && early === 0 && notTerminal === 0 && missingEffects === 0,
    jobsChecked: input.jobs.length,
    slotsChecked,
    lost,
    duplicateEffects,
    unexpected,
    early,
    notTerminal,
    missingEffects,
    runsByState,
    latenessMs: { p50: percentile(lateness, 50), p99: percentile(lateness, 99), max: lateness.length ? Math.max(...lateness) : 0, samples: lateness.length },
    problems,
  };
}
