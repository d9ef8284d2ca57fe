// What every scheduler simulation seed must end with (after heal and settle), read from the
// leader's store, the other replicas and the effect sink:
// - I1: at most one scheduled run per (job, slot);
// - I2: every slot of an active job up to the checked window has a run record (a run, or a
//   SKIPPED / MISSED record), in the stretches of its life given by its applied pauses, resumes
//   and updates (a pause is the record of the slots it covers); a record retention trimmed counts
//   (it was stored once); a scheduled run sits at its slot plus the job's jitter for it;
// - retention: no job holds more ended runs than max_runs plus the hard slack (retention.ts);
// - I3: attempts' tokens grow; every applied effect carries one of its run's tokens; a run's
//   effect applied again (a re-execution) only after the attempt before it lost its lease, failed
//   or timed out; a SUCCEEDED run's success was reported by the execution holding its last token
//   (no stale result accepted); no other attempt succeeded;
// - no handler started before its run's scheduled instant;
// - the replicas hold equal state hashes at equal applied indexes.
import { AttemptOutcome, RunState, type Run } from '../../gen/herald/v1/run.js';
import { JobState, type Job, type JobSpec } from '../../gen/herald/v1/job.js';
import { decodeJobRecord, decodeRunRecord, parseRunId } from '../../fsm/index.js';
import { JOB_PREFIX, prefixEnd, RUN_PREFIX } from '../../fsm/store/key-layout.js';
import { slotsInRange } from '../../fsm/schedule/next-slot.js';
import { jitteredSlot } from '../../fsm/schedule/jitter.js';
import { hardRunSlack, maxRunsOf } from '../../fsm/store/retention.js';
import { isTerminal } from '../../fsm/store/records.js';
import { ScheduleCaches } from '../../fsm/schedule/schedule-caches.js';
import type { EffectSink } from './effect-sink.js';
import type { SchedSimNode } from './sched-sim-node.js';

export interface SchedViolation {
  kind: string;
  detail: string;
}

export interface SchedCheckResult {
  slotsChecked: number;
  /** Slots of those whose record retention had trimmed (stored once, gone at the end). */
  trimmedSlots: number;
  runsChecked: number;
  effects: number;
  reExecutions: number;
}

export interface SchedCheckInput {
  nodes: readonly SchedSimNode[];
  leader: SchedSimNode;
  sink: EffectSink;
  /** Slots before this (cluster ms) must be accounted for. */
  windowEndMs: number;
  /** How early a start may be measured (the simulation's time resolution). */
  startToleranceMs: number;
  /** A job's stretches whose slots need records (JobChangeLog.segments: pauses, resumes, updates); absent: its current spec since its creation. */
  segmentsOf?: (job: Job) => ReadonlyArray<{ spec: JobSpec; fromMs: number; toMs: number }> | undefined;
  /** Jobs deleted during the run: their runs went with them, so their effects have no run to match. */
  deletedJobs?: ReadonlySet<string>;
  /** Whether a scheduled run for (job, slot) was ever stored (retention may have trimmed it since). */
  everStored?: (jobId: string, slotMs: number) => boolean;
  /** Whether a record of the run was ever stored (retention may have trimmed it since). */
  runEverStored?: (runId: string) => boolean;
  /** Every spec the job had (its applied creates and updates), for the jitter a slot fired with. */
  specsOf?: (jobId: string) => readonly JobSpec[];
}

/** Attempt outcomes after which the run may legitimately execute again. */
const RE_EXECUTABLE = new Set([AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED, AttemptOutcome.ATTEMPT_OUTCOME_FAILED, AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]);

/** At most this many violations of one kind are listed (a broken seed breaks many things). */
const MAX_PER_KIND = 3;

export async function checkScheduler(input: SchedCheckInput): Promise<SchedCheckResult & { violations: SchedViolation[] }> {
  const { leader, sink } = input;
  const violations: SchedViolation[] = [];
  const perKind = new Map<string, number>();
  const violate = (kind: string, detail: string) => {
    const k = (perKind.get(kind) ?? 0) + 1;
    perKind.set(kind, k);
    if (k <= MAX_PER_KIND) violations.push({ kind, detail });
  };

  // Replicas: equal applied index and state hash.
  const hashes = await Promise.all(input.nodes.map(async (n) => ({ id: n.id, applied: await n.fsm.appliedIndex(), hash: await n.fsm.stateHash() })));
  const ref = hashes.find((h) => h.id === leader.id)!;
  for (const h of hashes) {
    if (h.applied === ref.applied && h.hash !== ref.hash) {
      const other = input.nodes.find((n) => n.id === h.id)!;
      violate('state-hash', `${h.id} and ${ref.id} differ at applied index ${h.applied}: keys ${(await differingKeys(other, leader)).join(', ')}`);
    }
    if (h.applied !== ref.applied) violate('not-converged', `${h.id} applied ${h.applied}, leader ${ref.applied}`);
  }

  const db = leader.store;
  const jobs: Job[] = (await db.values({ gte: JOB_PREFIX, lt: prefixEnd(JOB_PREFIX) }).all()).map((v) => decodeJobRecord(v).job);
  const runs: Run[] = (await db.values({ gte: RUN_PREFIX, lt: prefixEnd(RUN_PREFIX) }).all()).map((v) => decodeRunRecord(v).run);

  // I1
  const bySlot = new Map<string, Run[]>();
  for (const r of runs) {
    if (r.manual || r.backfilled) continue;
    const k = `${r.jobId}@${r.slotUnixMs}`;
    const list = bySlot.get(k);
    if (list) list.push(r);
    else bySlot.set(k, [r]);
  }
  for (const [k, list] of bySlot) if (list.length > 1) violate('I1-two-runs-one-slot', `${k}: ${list.map((r) => r.id).join(', ')}`);

  // Retention: ended runs per job within max_runs plus the hard slack (apply-run-bound.ts).
  const ended = new Map<string, number>();
  for (const r of runs) if (isTerminal(r.state)) ended.set(r.jobId, (ended.get(r.jobId) ?? 0) + 1);
  for (const job of jobs) {
    const n = ended.get(job.id) ?? 0;
    const maxRuns = maxRunsOf(job.spec);
    if (n > maxRuns + hardRunSlack(maxRuns)) violate('retention-exceeded', `${job.id} holds ${n} ended runs; max_runs ${maxRuns} plus the hard slack ${hardRunSlack(maxRuns)}`);
  }

  // I2
  const caches = new ScheduleCaches();
  let slotsChecked = 0;
  let trimmedSlots = 0;
  for (const job of jobs) {
    if ((job.state !== JobState.JOB_STATE_ACTIVE && job.state !== JobState.JOB_STATE_PAUSED) || !job.spec) continue;
    const segments = input.segmentsOf?.(job) ?? [{ spec: job.spec, fromMs: job.createdUnixMs - 1, toMs: input.windowEndMs }];
    for (const sg of segments) {
      const to = Math.min(sg.toMs, input.windowEndMs - 1);
      if (to <= sg.fromMs) continue;
      for (const slot of slotsInRange(sg.spec, sg.fromMs + 1, to + 1, job.createdUnixMs, 1_000_000, caches)) {
        const at = jitteredSlot(job.id, sg.spec, [slot], 0, job.createdUnixMs, caches);
        // A stretch ended by a pause or an update: a slot whose jittered instant was still ahead
        // was not late, and the pause or the new schedule is its record (unfired-slots.ts).
        if (at > sg.toMs) continue;
        slotsChecked++;
        const held = bySlot.get(`${job.id}@${slot}`);
        if (!held) {
          if (input.everStored?.(job.id, slot)) trimmedSlots++;
          else violate('I2-slot-lost', `${job.id} slot ${slot} (window end ${input.windowEndMs}) has no run record`);
          continue;
        }
        // Under the spec in force when it fired: an update that keeps the schedule but changes the
        // jitter lets the slots still unfired take the new spec's (apply-jobs.ts scheduleChanged).
        const specs = [...segments.map((o) => o.spec), ...(input.specsOf?.(job.id) ?? [])];
        const fits = (r: Run) => r.scheduledUnixMs === at || specs.some((sp) => jitteredSlot(job.id, sp, [slot], 0, job.createdUnixMs, caches) === r.scheduledUnixMs);
        for (const r of held) if (!fits(r)) violate('jitter-misplaced', `${r.id}: scheduled at ${r.scheduledUnixMs}, not at its slot plus jitter ${at} (jitter window ${sg.spec.jitterMs} ms)`);
      }
    }
  }

  // I3 and early starts
  let reExecutions = 0;
  for (const r of runs) {
    const attempts = r.attempts;
    for (let i = 1; i < attempts.length; i++) {
      if (attempts[i]!.fencingToken <= attempts[i - 1]!.fencingToken) violate('I3-token-order', `${r.id}: attempt ${i + 1} token ${attempts[i]!.fencingToken} after ${attempts[i - 1]!.fencingToken}`);
    }
    const tokenOf = new Map(attempts.map((a) => [a.fencingToken, a]));
    const effects = sink.effects.get(r.id) ?? [];
    for (let i = 0; i < effects.length; i++) {
      const e = effects[i]!;
      if (!tokenOf.has(e.token)) violate('I3-unknown-token', `${r.id}: effect under token ${e.token}, not one of its attempts' (${attempts.map((a) => a.fencingToken).join(',')})`);
      if (i === 0) continue;
      reExecutions++;
      const before = tokenOf.get(effects[i - 1]!.token);
      if (before && !RE_EXECUTABLE.has(before.outcome)) {
        violate('I3-unexplained-re-execution', `${r.id}: effect again under token ${e.token} though attempt ${before.number} (token ${before.fencingToken}) ended ${AttemptOutcome[before.outcome]}`);
      }
    }
    const succeeded = attempts.filter((a) => a.outcome === AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED);
    if (succeeded.length > 1) violate('I3-two-successes', `${r.id}: attempts ${succeeded.map((a) => a.number).join(', ')} all succeeded`);
    if (r.state === RunState.RUN_STATE_SUCCEEDED) {
      const last = attempts[attempts.length - 1];
      if (!last || last.outcome !== AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED) violate('I3-stale-result', `${r.id}: SUCCEEDED but its last attempt did not succeed`);
      else if (!sink.successReports.has(`${r.id}#${last.fencingToken}`)) {
        violate('I3-stale-result', `${r.id}: SUCCEEDED under token ${last.fencingToken}, which no execution that wrote the effect reported`);
      }
    }
    for (const s of sink.starts.get(r.id) ?? []) {
      if (s.atMs + input.startToleranceMs < s.slotMs) violate('early-start', `${r.id} (token ${s.token}) started at ${s.atMs}, ${s.slotMs - s.atMs} ms before its scheduled instant ${s.slotMs}`);
    }
  }
  for (const s of sink.staleAccepted) violate('I3-stale-result-accepted', `${s}: a result sent after its lease was lost was accepted`);
  const runIds = new Set(runs.map((r) => r.id));
  for (const [runId, effects] of sink.effects) {
    if (input.deletedJobs?.has(parseRunId(runId)?.jobId ?? '')) continue;
    if (!runIds.has(runId) && effects.length > 0 && !input.runEverStored?.(runId)) violate('I3-effect-without-run', `${runId}: effect for a run the store does not hold`);
  }
  return { slotsChecked, trimmedSlots, runsChecked: runs.length, effects: sink.effectCount, reExecutions, violations };
}

/** The first keys whose values differ between two replicas' stores (for the report). */
async function differingKeys(a: SchedSimNode, b: SchedSimNode): Promise<string[]> {
  const av = new Map(await a.store.iterator().all());
  const bv = new Map(await b.store.iterator().all());
  const out: string[] = [];
  for (const k of new Set([...av.keys(), ...bv.keys()])) {
    const x = av.get(k);
    const y = bv.get(k);
    if (x && y && Buffer.compare(x, y) === 0) continue;
    out.push(`${JSON.stringify(k)} (${x ? `${x.length} B` : 'absent'} on ${a.id}, ${y ? `${y.length} B` : 'absent'} on ${b.id})`);
    if (out.length === 4) break;
  }
  return out;
}
