// The fire scheduler against a fake node and dispatcher: due slots go out as fireRuns commands,
// at most maxFiresInFlight at a time, each with the claim the dispatcher plans for its runs as
// the adjacent entry, slots coming due meanwhile wait for the next command, no faster than
// connected workers have room for (fire pacing, bounded by maxFireHoldMs), and a failed fire puts
// its slots back in the wheel.
import { proposalBytes, type ProposalOutcome } from '../../src/raft/driver/proposal-tracker.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { Job, JobSpec, JobState, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { decodeCommand, encodeCommand, encodeResult, hintedDueMs, scheduledRunId, SpecCache, type DispatchHint, type FireItem } from '../../src/fsm/index.js';
import { jitterOffsetMs } from '../../src/fsm/schedule/index.js';
import { FireScheduler, type FireSchedulerDeps } from '../../src/server/leader/fire/fire-scheduler.js';
import type { ClaimBehindFire, DispatchRoom } from '../../src/server/leader/dispatch/dispatcher.js';
import { createNodeMetrics } from '../../src/server/node/metrics.js';
import { schedulerConfig, type SchedulerConfig } from '../../src/server/leader/leader-config.js';
import { checkUnsafeSwitches } from '../../src/fsm/apply/unsafe-switches.js';

const T0 = Date.UTC(2030, 0, 1);

interface Proposed {
  items: readonly FireItem[];
  settle: (ok: boolean) => void;
}

function fakeContext(config: Partial<SchedulerConfig>, due: { jobId: string; slotMs: number }[], records = new Map<string, Job>()) {
  let now = T0;
  const proposed: Proposed[] = [];
  /** The fired items of each fire proposed with a claim as its adjacent entry. */
  const behind: FireItem[][] = [];
  /** Fires proposed on their own (the dispatcher planned no claim). */
  const alone: FireItem[][] = [];
  /** Claims whose outcome went back to the dispatcher, with that outcome. */
  const claimOutcomes: { claim: ClaimBehindFire; outcome: Promise<ProposalOutcome> }[] = [];
  // The dispatcher's room for runs (undefined: no worker connected, no pacing), and whether it
  // plans a claim behind each fire.
  const dispatch = { room: undefined as DispatchRoom | undefined, claims: true };
  const fireResult = encodeResult({ type: 'fire', items: [], signals: [] });
  const firedItems = (command: Uint8Array): FireItem[] => {
    const cmd = decodeCommand(command);
    if (cmd.type !== 'fireRuns') throw new Error(`unexpected ${cmd.type}`);
    return [...cmd.items];
  };
  // A fire waits for the test to settle it (commit or failure).
  const proposeFire = (command: Uint8Array): Promise<ProposalOutcome> =>
    new Promise((resolve, reject) => {
      proposed.push({ items: firedItems(command), settle: (ok) => (ok ? resolve({ index: proposed.length, result: fireResult }) : reject(new Error('commit failed'))) });
    });
  const deps: FireSchedulerDeps = {
    config: schedulerConfig({ tickMs: 10, wheelResolutionMs: 10, horizonMs: 60_000, ...config }),
    metrics: createNodeMetrics({ nodeId: 'n1' }, { defaultMetrics: false }),
    log: pino({ level: 'silent' }),
    reads: {
      dueWindow: async (from: number, to: number) => due.filter((d) => d.slotMs >= from && d.slotMs < to),
      fireCursor: async () => undefined,
      getJobs: async (ids: readonly string[]) => new Map(ids.map((id) => [id, records.get(id)])),
      specCache: new SpecCache(),
      unsafe: checkUnsafeSwitches(undefined),
    },
    now: () => now,
    active: () => true,
    node: {
      propose: (proposal) => {
        const command = proposalBytes(proposal);
        alone.push(firedItems(command));
        return proposeFire(command);
      },
      proposeBackToBack: (proposals) => {
        const commands = proposals.map(proposalBytes);
        const [fire, claim] = commands;
        if (commands.length !== 2 || decodeCommand(claim!).type !== 'claimRuns') throw new Error('expected a fire and its claim');
        const fired = proposeFire(fire!);
        behind.push(firedItems(fire!));
        return [fired, fired.then(() => ({ index: proposed.length + 1, result: encodeResult({ type: 'claim', items: [] }) }))];
      },
    },
    dispatch: {
      dispatchRoom: () => dispatch.room,
      claimBehindFire: (items, nowMs) =>
        dispatch.claims
          ? { command: { type: 'claimRuns', nowMs, items: items.map((i) => ({ runId: scheduledRunId(i.jobId, i.slotMs), workerId: 'w', leaseDeadlineMs: 0 })), aheadMs: 0, defaultLeaseMs: 30_000 }, plan: [], reserved: [] }
          : undefined,
      claimProposed: (claim, outcome) => {
        claimOutcomes.push({ claim, outcome });
        outcome.catch(() => undefined); // the real dispatcher handles a failed claim
      },
      wake: () => undefined,
    },
  };
  return { ctx: deps, proposed, behind, alone, claimOutcomes, dispatch, advance: (ms: number) => (now += ms) };
}

async function tick(advance: (ms: number) => void, ms: number): Promise<void> {
  advance(ms);
  await vi.advanceTimersByTimeAsync(ms);
}

/** Runs the scheduler `ms` in 10 ms ticks, committing every fire: when (fake time) each job fired. */
async function fireFor(f: ReturnType<typeof fakeContext>, ms: number): Promise<Map<string, number>> {
  const firedAt = new Map<string, number>();
  let now = T0;
  for (let t = 0; t < ms; t += 10) {
    await tick(f.advance, 10);
    now += 10;
    for (const p of f.proposed.splice(0)) {
      for (const it of p.items) firedAt.set(it.jobId, now);
      p.settle(true);
    }
    await vi.advanceTimersByTimeAsync(0);
  }
  return firedAt;
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('FireScheduler', () => {
  it('keeps one fire in flight by default: slots due meanwhile ride in the next command', async () => {
    const due = [0, 1, 2].map((i) => ({ jobId: `j${i}`, slotMs: T0 + 20 + i * 10 }));
    const f = fakeContext({ fireBatchSize: 100 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0']]);
    // j1 and j2 come due while j0's fire is in flight: nothing more is proposed.
    await tick(f.advance, 30);
    expect(f.proposed).toHaveLength(1);
    f.proposed[0]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0'], ['j1', 'j2']]);
    // Each fire's claim is proposed right behind it.
    expect(f.behind).toEqual(f.proposed.map((p) => p.items));
    s.stop();
  });

  it('proposes the fire and its claim as one back-to-back pair and hands the claim\'s outcome to the dispatcher; a fire without a claim goes alone', async () => {
    const due = [0, 1].map((i) => ({ jobId: `j${i}`, slotMs: T0 + 20 + i * 10 }));
    const f = fakeContext({ fireBatchSize: 100 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    expect(f.behind).toEqual([[{ jobId: 'j0', slotMs: T0 + 20 }]]);
    expect(f.claimOutcomes.map((c) => c.claim.command.items.map((i) => i.runId))).toEqual([[scheduledRunId('j0', T0 + 20)]]);
    f.proposed[0]!.settle(true);
    await expect(f.claimOutcomes[0]!.outcome).resolves.toMatchObject({ result: encodeResult({ type: 'claim', items: [] }) });
    // The dispatcher plans no claim (a backlog, say): the next fire is proposed on its own.
    f.dispatch.claims = false;
    await tick(f.advance, 10);
    expect(f.alone).toEqual([[{ jobId: 'j1', slotMs: T0 + 30 }]]);
    expect(f.claimOutcomes).toHaveLength(1);
    f.proposed[1]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    s.stop();
  });

  it('with maxFiresInFlight = 2, a second fire goes out while the first is still in flight', async () => {
    const due = [0, 1, 2].map((i) => ({ jobId: `j${i}`, slotMs: T0 + 20 + i * 10 }));
    const f = fakeContext({ fireBatchSize: 100, maxFiresInFlight: 2 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    await tick(f.advance, 10);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0'], ['j1']]);
    await tick(f.advance, 10);
    expect(f.proposed).toHaveLength(2); // j2 waits: two are in flight
    f.proposed[1]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(f.proposed.map((p) => p.items.map((i) => i.jobId))).toEqual([['j0'], ['j1'], ['j2']]);
    s.stop();
  });

  it('cuts due slots into commands of fireBatchSize', async () => {
    const due = Array.from({ length: 5 }, (_, i) => ({ jobId: `j${i}`, slotMs: T0 + 20 }));
    const f = fakeContext({ fireBatchSize: 2, maxFiresInFlight: 3 }, due);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 30);
    expect(f.proposed.map((p) => p.items.length)).toEqual([2, 2, 1]);
    s.stop();
  });

  it('fires a job ahead of its slot by dispatchLeadMs once its last fire said it allows overlap and has no jitter; others at the slot', async () => {
    const slot = T0 + 200;
    const f = fakeContext({ fireBatchSize: 100, maxFiresInFlight: 4, dispatchLeadMs: 100 }, []);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    // The previous fire of each job (as applied): its next slot, and how that run will be dispatched.
    const hint = (p: Partial<DispatchHint>): DispatchHint => ({ taskType: 't', priority: 0, jittered: false, allowsOverlap: true, jitterWindowMs: 0, ...p });
    const jobs = ['allow', 'forbid', 'jitter', 'none', 'changed'];
    const dispatch = [hint({}), hint({ allowsOverlap: false }), hint({ jittered: true }), undefined, hint({})];
    s.onApplied([
      {
        index: 7,
        kind: 'fire',
        data: encodeCommand({ type: 'fireRuns', nowMs: T0 - 1000, misfireThresholdMs: 60_000, items: jobs.map((jobId) => ({ jobId, slotMs: T0 - 1000 })) }),
        result: encodeResult({ type: 'fire', items: jobs.map((_, i) => ({ created: [], missed: [], skipped: [], nextFireMs: slot, ...(dispatch[i] && { dispatch: dispatch[i] }) })), signals: [] }),
      },
    ]);
    expect(s.hintOf('allow')).toEqual(hint({}));
    // An applied change to a job replaces its hint with the changed spec's ("changed" got a jitter
    // after that fire, so it now fires at its slot).
    const job = Job.fromPartial({ id: 'changed', state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: slot, spec: JobSpec.fromPartial({ taskType: 't', jitterMs: 50 }) });
    s.onApplied([{ index: 8, kind: 'job', data: new Uint8Array(), result: encodeResult({ type: 'job', job, created: false }) }]);
    expect(s.hintOf('changed')).toEqual(hint({ jittered: true }));
    await tick(f.advance, 90);
    expect(f.proposed).toEqual([]); // 110 ms before the slot: not yet
    await tick(f.advance, 20);
    expect(f.proposed.map((p) => p.items)).toEqual([[{ jobId: 'allow', slotMs: slot }]]); // the slot is still 90 ms away
    await tick(f.advance, 90);
    expect(f.proposed.slice(1).flatMap((p) => p.items.map((i) => i.jobId)).sort()).toEqual(['changed', 'forbid', 'jitter', 'none']);
    s.stop();
  });

  it('fires a jittered job at its own jittered instant (less the lead) when the hint knows it, and claims its run behind the fire; otherwise at the slot', async () => {
    const slot = T0 + 1000;
    const f = fakeContext({ fireBatchSize: 100, maxFiresInFlight: 8, dispatchLeadMs: 100 }, []);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    const job = (id: string, spec: Partial<JobSpec>) => ({
      job: Job.fromPartial({ id, state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: slot, spec: JobSpec.fromPartial({ taskType: 't', jitterMs: 20_000, ...spec }) }),
      created: true,
    });
    const daily = { schedule: { kind: { $case: 'cron' as const, cron: { expression: '0 0 * * *', timeZone: 'UTC' } } } };
    const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
    s.onApplied([
      {
        index: 5,
        kind: 'jobs',
        data: new Uint8Array(),
        result: encodeResult({
          type: 'jobs',
          items: [
            ...ids.map((id) => job(id, daily)),
            // Every 10 s with a 20 s jitter: the next slot cuts the window, only the fire knows the offset.
            job('cut', { schedule: { kind: { $case: 'every', every: { intervalMs: 10_000, anchorUnixMs: 0 } } } }),
            // Overlap FORBID: the fire decides on the runs still active, so it is not moved.
            job('forbid', { ...daily, overlapPolicy: OverlapPolicy.OVERLAP_POLICY_FORBID }),
          ],
        }),
      },
    ]);
    expect(s.hintOf('m0')).toMatchObject({ jittered: true, jitterWindowMs: 20_000 });
    expect(s.hintOf('cut')).toMatchObject({ jittered: true, jitterWindowMs: 0 });
    const dueOf = (id: string) => hintedDueMs(id, slot, s.hintOf(id)!)!;
    for (const id of ids) expect(dueOf(id) - slot).toBe(jitterOffsetMs(id, slot, 20_000, undefined));
    // The herd's instants spread over the window (not all at its start).
    expect(new Set(ids.map((id) => Math.floor((dueOf(id) - slot) / 5000))).size).toBeGreaterThan(1);

    const firedAt = await fireFor(f, 22_000);
    for (const id of ids) {
      const at = firedAt.get(id)!;
      expect(at).toBeGreaterThanOrEqual(dueOf(id) - 100);
      expect(at).toBeLessThan(dueOf(id) - 100 + 20); // within two wheel ticks
    }
    expect(firedAt.get('cut')).toBeLessThan(slot + 20);
    expect(firedAt.get('forbid')).toBeLessThan(slot + 20);
    // Each spread fire's run was claimed right behind it (its due instant known), the others' not.
    const claimedBehind = new Set(f.claimOutcomes.flatMap((c) => c.claim.command.items.map((i) => i.runId)));
    expect(ids.every((id) => claimedBehind.has(scheduledRunId(id, slot)))).toBe(true);
    s.stop();
  });

  it('reads the hint of a jittered job entering the wheel from the due index (created long before its slot) from its record', async () => {
    const slot = T0 + 30_000;
    const daily = JobSpec.fromPartial({ taskType: 't', jitterMs: 20_000, schedule: { kind: { $case: 'cron', cron: { expression: '0 0 * * *', timeZone: 'UTC' } } } });
    const ids = Array.from({ length: 10 }, (_, i) => `far${i}`);
    const records = new Map(ids.map((id) => [id, Job.fromPartial({ id, state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: slot, spec: daily })]));
    records.set('paused', Job.fromPartial({ id: 'paused', state: JobState.JOB_STATE_PAUSED, nextFireUnixMs: slot, spec: daily }));
    const f = fakeContext({ fireBatchSize: 100, maxFiresInFlight: 8, dispatchLeadMs: 100 }, [...ids, 'paused'].map((jobId) => ({ jobId, slotMs: slot })), records);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    expect(s.hintOf('far0')).toMatchObject({ jittered: true, jitterWindowMs: 20_000 });
    expect(s.hintOf('paused')).toBeUndefined();
    const firedAt = await fireFor(f, 52_000);
    for (const id of ids) {
      const due = slot + jitterOffsetMs(id, slot, 20_000, undefined);
      expect(firedAt.get(id)! - (due - 100)).toBeGreaterThanOrEqual(0);
      expect(firedAt.get(id)! - (due - 100)).toBeLessThan(20);
    }
    expect(firedAt.get('paused')).toBeLessThan(slot + 20); // no hint: at the slot, as before
    s.stop();
  });

  it('takes the hint of a job from its create: its first slot already fires ahead; a paused job has none', async () => {
    const slot = T0 + 200;
    const f = fakeContext({ fireBatchSize: 100, dispatchLeadMs: 100 }, []);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    const job = (id: string, spec: Partial<JobSpec>, state = JobState.JOB_STATE_ACTIVE) =>
      Job.fromPartial({ id, state, nextFireUnixMs: slot, spec: JobSpec.fromPartial({ taskType: 'mail', priority: 3, ...spec }) });
    const jobs = [job('a', {}), job('b', {}), job('paused', {}, JobState.JOB_STATE_PAUSED)];
    s.onApplied([{ index: 5, kind: 'jobs', data: new Uint8Array(), result: encodeResult({ type: 'jobs', items: jobs.map((j) => ({ job: j, created: true })) }) }]);
    const expected: DispatchHint = { taskType: 'mail', priority: 3, jittered: false, allowsOverlap: true, jitterWindowMs: 0 };
    expect(s.hintOf('a')).toEqual(expected);
    // Jobs created with equal specs share one hint (one spec decode for a whole herd).
    expect(s.hintOf('b')).toBe(s.hintOf('a'));
    expect(s.hintOf('paused')).toBeUndefined();
    await tick(f.advance, 20); // the applied creates reach the wheel on a tick
    await tick(f.advance, 90);
    expect(f.proposed.flatMap((p) => p.items)).toEqual([
      { jobId: 'a', slotMs: slot },
      { jobId: 'b', slotMs: slot },
    ]);
    s.stop();
  });

  /** Applies the creates of jobs due at `slotMs` (their results carry each job's dispatch hint). */
  function created(s: FireScheduler, slotMs: number, jobs: { id: string; taskType?: string; jitterMs?: number }[]): void {
    const items = jobs.map(({ id, taskType = 't', jitterMs = 0 }) => ({
      job: Job.fromPartial({ id, state: JobState.JOB_STATE_ACTIVE, nextFireUnixMs: slotMs, spec: JobSpec.fromPartial({ taskType, jitterMs }) }),
      created: true,
    }));
    s.onApplied([{ index: 5, kind: 'jobs', data: new Uint8Array(), result: encodeResult({ type: 'jobs', items }) }]);
  }
  const room = (credits: number, taskTypes = ['t']): DispatchRoom => ({ credits, taskTypes: new Set(taskTypes) });
  const ids = (f: { proposed: Proposed[] }) => f.proposed.map((p) => p.items.map((i) => i.jobId));

  it('paces fires to the room workers have: holds the rest until room comes, and never past maxFireHoldMs', async () => {
    const f = fakeContext({ fireBatchSize: 100, maxFireHoldMs: 1000, dispatchLeadMs: 0 }, []);
    f.dispatch.room = room(3);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    created(
      s,
      T0 + 20,
      Array.from({ length: 10 }, (_, i) => ({ id: `j${i}` })),
    );
    await tick(f.advance, 30);
    expect(ids(f)).toEqual([['j0', 'j1', 'j2']]);
    // The claim behind it took the room; the fire applies.
    f.dispatch.room = room(0);
    f.proposed[0]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    await tick(f.advance, 100);
    expect(f.proposed).toHaveLength(1); // held: nowhere to run them
    // Workers free room (the dispatcher wakes the scheduler): the next fire takes that much.
    f.dispatch.room = room(4);
    s.pump();
    expect(f.proposed.map((p) => p.items.length)).toEqual([3, 4]);
    f.dispatch.room = room(0);
    f.proposed[1]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    await tick(f.advance, 700);
    expect(f.proposed).toHaveLength(2);
    // 1,000 ms past their slot the rest fire without room, to wait in the ready index.
    await tick(f.advance, 200);
    expect(ids(f)).toEqual([['j0', 'j1', 'j2'], ['j3', 'j4', 'j5', 'j6'], ['j7', 'j8', 'j9']]);
    s.stop();
  });

  it('does not hold slots whose runs would not be claimed behind the fire: no hint, jittered, no worker for the type', async () => {
    const f = fakeContext({ fireBatchSize: 100, maxFireHoldMs: 60_000, dispatchLeadMs: 0 }, [{ jobId: 'unhinted', slotMs: T0 + 20 }]);
    f.dispatch.room = room(0);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    created(s, T0 + 20, [{ id: 'other-type', taskType: 'nobody' }, { id: 'held' }, { id: 'jittered', jitterMs: 5 }]);
    await tick(f.advance, 30);
    expect(ids(f).map((c) => c.sort())).toEqual([['jittered', 'other-type', 'unhinted']]);
    f.dispatch.room = room(1);
    f.proposed[0]!.settle(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(ids(f)[1]).toEqual(['held']);
    s.stop();
  });

  it('holds slots at most half the misfire threshold, so pacing never turns a late run into a misfire', async () => {
    const f = fakeContext({ fireBatchSize: 100, maxFireHoldMs: 60_000, misfireThresholdMs: 400, watchdogGraceMs: 60_000, dispatchLeadMs: 0 }, []);
    f.dispatch.room = room(0);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    created(s, T0 + 20, [{ id: 'j0' }]);
    await tick(f.advance, 200);
    expect(f.proposed).toHaveLength(0);
    await tick(f.advance, 20);
    expect(f.proposed).toHaveLength(1); // 200 ms (half of 400) past the slot
    s.stop();
  });

  it('without workers (no room known) or with maxFireHoldMs 0, fires slots as they come due', async () => {
    for (const [r, hold] of [
      [undefined, 60_000],
      [room(0), 0],
    ] as const) {
      const f = fakeContext({ fireBatchSize: 100, maxFireHoldMs: hold, dispatchLeadMs: 0 }, []);
      f.dispatch.room = r;
      const s = new FireScheduler(f.ctx);
      await s.start(T0);
      created(s, T0 + 20, [{ id: 'j0' }]);
      await tick(f.advance, 30);
      expect(f.proposed).toHaveLength(1);
      s.stop();
    }
  });

  it('with dispatchLeadMs 0 fires every job at its slot', async () => {
    const f = fakeContext({ fireBatchSize: 100, dispatchLeadMs: 0 }, []);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    s.onApplied([
      {
        index: 7,
        kind: 'fire',
        data: encodeCommand({ type: 'fireRuns', nowMs: T0, misfireThresholdMs: 60_000, items: [{ jobId: 'allow', slotMs: T0 - 1000 }] }),
        result: encodeResult({ type: 'fire', items: [{ created: [], missed: [], skipped: [], nextFireMs: T0 + 200, dispatch: { taskType: 't', priority: 0, jittered: false, allowsOverlap: true, jitterWindowMs: 0 } }], signals: [] }),
      },
    ]);
    await tick(f.advance, 190);
    expect(f.proposed).toEqual([]);
    await tick(f.advance, 20);
    expect(f.proposed).toHaveLength(1);
    s.stop();
  });

  it('puts the slots of a failed fire back in the wheel and fires them again', async () => {
    const f = fakeContext({ fireBatchSize: 100 }, [{ jobId: 'j0', slotMs: T0 + 20 }]);
    const s = new FireScheduler(f.ctx);
    await s.start(T0);
    await tick(f.advance, 25);
    expect(f.proposed).toHaveLength(1);
    f.proposed[0]!.settle(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(s.holds('j0')).toBe(true);
    await tick(f.advance, 150);
    expect(f.proposed.map((p) => p.items)).toEqual([
      [{ jobId: 'j0', slotMs: T0 + 20 }],
      [{ jobId: 'j0', slotMs: T0 + 20 }],
    ]);
    s.stop();
  });
});
