// Property tests: random command sequences applied to the FSM and to the reference model give the
// same observable state, and no (job, slot) ever gets a second run (I1).
import { encodeCommand } from '../../src/fsm/index.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JobState, MisfirePolicy, OverlapPolicy } from '../../src/gen/herald/v1/job.js';
import { RunState } from '../../src/gen/herald/v1/run.js';
import type { FsmCommand, FsmResult } from '../../src/fsm/index.js';
import type { Entry } from '../../src/raft/types.js';
import { everySpec, openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';
import { ReferenceModel, type ModelJobSpec } from './reference-model.js';
import { COUNTED_STATES } from '../../src/fsm/store/ended-runs-tally.js';

const JOBS = ['a', 'b', 'c'];
const THRESHOLD = 5000;

type Op =
  | { k: 'put'; job: number; spec: ModelJobSpec; idem: string }
  | { k: 'pause' | 'resume' | 'delete' | 'trigger' | 'trim'; job: number }
  | { k: 'fire'; job: number; shift: number }
  | { k: 'claim' | 'cancel'; pick: number }
  | { k: 'finish'; pick: number; ok: boolean; skew: number }
  | { k: 'expire'; pick: number; skew: number };

const specArb: fc.Arbitrary<ModelJobSpec> = fc.record({
  intervalMs: fc.constantFrom(1000, 2000, 3000),
  anchorMs: fc.constant(T0),
  misfire: fc.constantFrom(MisfirePolicy.MISFIRE_POLICY_SKIP, MisfirePolicy.MISFIRE_POLICY_RUN_ONCE, MisfirePolicy.MISFIRE_POLICY_RUN_ALL),
  misfireMaxRuns: fc.integer({ min: 1, max: 3 }),
  overlap: fc.constantFrom(OverlapPolicy.OVERLAP_POLICY_ALLOW, OverlapPolicy.OVERLAP_POLICY_FORBID, OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE, OverlapPolicy.OVERLAP_POLICY_REPLACE),
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  priority: fc.integer({ min: -2, max: 2 }),
  retentionRuns: fc.constantFrom(0, 1, 1, 2),
});
const job = fc.integer({ min: 0, max: JOBS.length - 1 });
const pick = fc.nat(50);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ k: fc.constant('put' as const), job, spec: specArb, idem: fc.constantFrom('', '', 'k1', 'k2') }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constantFrom('pause' as const, 'resume' as const, 'delete' as const, 'trigger' as const, 'trim' as const), job }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('fire' as const), job, shift: fc.integer({ min: -1, max: 2 }) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('claim' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('cancel' as const), pick }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('finish' as const), pick, ok: fc.boolean(), skew: fc.constantFrom(0, 0, 0, -1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('expire' as const), pick, skew: fc.constantFrom(0, 0, -1) }) },
);
const stepArb = fc.record({ op: opArb, dt: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 2500 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 20_000 }) }), cut: fc.boolean() });

function toSpec(s: ModelJobSpec) {
  return everySpec(s.intervalMs, {
    misfirePolicy: s.misfire,
    misfireMaxRuns: s.misfireMaxRuns,
    overlapPolicy: s.overlap,
    retry: { maxAttempts: s.maxAttempts },
    priority: s.priority,
    retention: { maxRuns: s.retentionRuns },
  }, s.anchorMs);
}

/** CountRuns over everything kept, per counted state. */
async function endedCounts(t: TestFsm): Promise<Record<number, number>> {
  const { counts } = await t.fsm.countRuns(0);
  return Object.fromEntries(COUNTED_STATES.map((s) => [s, counts.get(s) ?? 0]));
}

async function observe(t: TestFsm, m: ReferenceModel, counting: boolean): Promise<void> {
  const jobs = (await t.fsm.listJobs({ pageSize: 1000 })).items;
  expect(jobs.map((j) => j.id)).toEqual([...m.jobs.keys()].sort());
  for (const j of jobs) {
    const mj = m.jobs.get(j.id)!;
    expect({ id: j.id, state: j.state, next: j.nextFireUnixMs, last: j.lastSlotUnixMs, active: j.activeRuns, version: j.version }).toEqual({
      id: mj.id,
      state: mj.paused ? JobState.JOB_STATE_PAUSED : JobState.JOB_STATE_ACTIVE,
      next: mj.nextFire,
      last: mj.lastSlot,
      active: mj.active.length,
      version: mj.version,
    });
  }
  const runs = (await t.fsm.listRuns({ pageSize: 1000 })).items;
  const got = runs.map((r) => ({ id: r.id, state: r.state, attempt: r.attempt, token: r.fencingToken, nb: r.notBeforeUnixMs })).sort((a, b) => (a.id < b.id ? -1 : 1));
  const want = [...m.runs.values()].map((r) => ({ id: r.id, state: r.state, attempt: r.attempt, token: r.token, nb: r.notBefore })).sort((a, b) => (a.id < b.id ? -1 : 1));
  expect(got).toEqual(want);
  const ready = (await t.fsm.readyRuns({ limit: 10_000 })).map((r) => r.id).sort();
  const modelReady = [...m.runs.values()].filter((r) => !r.held && (r.state === RunState.RUN_STATE_PENDING || r.state === RunState.RUN_STATE_FAILED)).map((r) => r.id).sort();
  expect(ready).toEqual(modelReady);
  const running = (await t.fsm.runningRuns()).map((r) => r.id).sort();
  expect(running).toEqual([...m.runs.values()].filter((r) => r.state === RunState.RUN_STATE_RUNNING).map((r) => r.id).sort());
  // Counters agree with the records.
  const counts = await t.fsm.runCounts();
  for (const s of [RunState.RUN_STATE_PENDING, RunState.RUN_STATE_RUNNING, RunState.RUN_STATE_SUCCEEDED, RunState.RUN_STATE_SKIPPED, RunState.RUN_STATE_MISSED, RunState.RUN_STATE_CANCELLED]) {
    expect(counts.get(s) ?? 0).toBe(runs.filter((r) => r.state === s).length);
  }
  // The ended-runs tally, once it follows apply, agrees with the records too (every run here
  // ended within its window: the times are years ahead of the clock).
  if (counting) expect(await endedCounts(t)).toEqual(Object.fromEntries(COUNTED_STATES.map((s) => [s, runs.filter((r) => r.state === s).length])));
}

describe('FSM vs reference model', () => {
  it('random command sequences give the same observable state; I1 holds for every sequence', async () => {
    let sequences = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 5, maxLength: 45 }), async (steps) => {
        // A record cache small enough to evict all the time (hits and misses mixed in every
        // command); the replica below has none, and must end byte-identical.
        const t = await openTestFsm({ recordCacheBytes: 700 });
        try {
          const m = new ReferenceModel();
          // Run ids handed out per job incarnation (a delete starts a new incarnation).
          const everFired = new Map<string, Set<string>>();
          let now = T0;
          let batch: FsmCommand[] = [];
          const all: FsmCommand[] = [];
          // What each apply call wrote, for a replica that takes the writes instead of the commands
          // (a call that changed nothing but the applied index has none: its entries, evaluated).
          const effects: (Uint8Array | Entry[])[] = [];
          // The ended-runs tally is seeded halfway (from what is stored then) and followed after.
          let counting = false;
          let step = 0;
          const flush = async () => {
            if (batch.length === 0) return;
            all.push(...batch);
            const captured = await t.applyCapturing(...batch);
            effects.push(captured.effects ?? captured.entries);
            const results: FsmResult[] = captured.results;
            for (const r of results) {
              expect(r.type).not.toBe('rejected');
              if (r.type !== 'fire') continue;
              for (const item of r.items) {
                for (const id of [...item.created, ...item.missed, ...item.skipped]) {
                  const jobId = id.split('@')[0]!;
                  const seen = everFired.get(jobId) ?? new Set();
                  expect(seen.has(id), `I1: ${id} fired twice`).toBe(false);
                  seen.add(id);
                  everFired.set(jobId, seen);
                }
              }
            }
            batch = [];
            await observe(t, m, counting);
          };
          for (const { op, dt, cut } of steps) {
            if (step++ === steps.length >> 1 && batch.length === 0) {
              await t.fsm.countRuns(0);
              counting = true;
            }
            now += dt;
            const token = t.nextIndex() + batch.length;
            const runIds = [...m.runs.keys()].sort();
            const runId = runIds.length ? runIds[('pick' in op ? op.pick : 0) % runIds.length]! : 'a@1';
            const run = m.runs.get(runId);
            const terminalBefore = m.terminalIds();
            switch (op.k) {
              case 'put':
                m.put(JOBS[op.job]!, op.spec, now, op.idem);
                batch.push({ type: 'putJob', nowMs: now, jobId: JOBS[op.job]!, spec: toSpec(op.spec), idempotencyKey: op.idem });
                break;
              case 'pause':
                m.pause(JOBS[op.job]!, now);
                batch.push({ type: 'pauseJob', nowMs: now, jobId: JOBS[op.job]!, note: '' });
                break;
              case 'resume':
                m.resume(JOBS[op.job]!, now);
                batch.push({ type: 'resumeJob', nowMs: now, jobId: JOBS[op.job]! });
                break;
              case 'delete':
                m.delete(JOBS[op.job]!);
                everFired.delete(JOBS[op.job]!);
                batch.push({ type: 'deleteJob', nowMs: now, jobId: JOBS[op.job]!, expectedVersion: 0 });
                break;
              case 'trim':
                m.trim(JOBS[op.job]!);
                batch.push({ type: 'trimHistory', nowMs: now, jobIds: [JOBS[op.job]!], maxIdempotencyKeys: 10 });
                break;
              case 'trigger':
                m.trigger(JOBS[op.job]!, now);
                batch.push({ type: 'triggerJob', nowMs: now, jobId: JOBS[op.job]!, idempotencyKey: '', ignoreOverlap: false });
                break;
              case 'fire': {
                const j = m.jobs.get(JOBS[op.job]!);
                // The leader fires the slot it saw due: the cursor, a stale one, or a later one.
                const slot = j ? Math.min(j.nextFire + op.shift * j.spec.intervalMs, now + j.spec.intervalMs) : now;
                m.fire(JOBS[op.job]!, slot, now, THRESHOLD);
                batch.push({ type: 'fireRuns', nowMs: now, misfireThresholdMs: THRESHOLD, items: [{ jobId: JOBS[op.job]!, slotMs: Math.max(0, slot) }] });
                break;
              }
              case 'claim':
                m.claim(runId, now, token);
                batch.push({ type: 'claimRuns', nowMs: now, items: [{ runId, workerId: 'w', leaseDeadlineMs: now + 30_000 }] });
                break;
              case 'cancel':
                m.cancel(runId);
                batch.push({ type: 'cancelRuns', nowMs: now, items: [{ runId, reason: '' }] });
                break;
              case 'finish': {
                const tok = (run?.token ?? 0) + op.skew;
                m.finish(runId, tok, op.ok, now);
                batch.push({ type: 'finishRuns', nowMs: now, items: [{ runId, fencingToken: Math.max(0, tok), succeeded: op.ok, output: new Uint8Array(), errorType: op.ok ? '' : 'E', errorMessage: '', retryable: !op.ok, timedOut: false }] });
                break;
              }
              case 'expire': {
                const tok = (run?.token ?? 0) + op.skew;
                m.expire(runId, tok, now);
                batch.push({ type: 'expireLeases', nowMs: now, items: [{ runId, fencingToken: Math.max(0, tok) }] });
                break;
              }
            }
            m.bound(terminalBefore);
            if (cut) await flush();
          }
          // Every sequence ends with a trim of every job, so retention is always exercised.
          for (const j of JOBS) m.trim(j);
          batch.push({ type: 'trimHistory', nowMs: now, jobIds: JOBS, maxIdempotencyKeys: 10 });
          await flush();
          if (++sequences % 6 !== 1) return; // the replica checks below cost two more stores
          // Determinism (I5): the same log in one apply call gives byte-identical state (with or
          // without a record cache), and a snapshot of it restores to the same bytes and ready index.
          const one = await openTestFsm({ recordCacheBytes: 0 });
          const copy = await openTestFsm();
          const written = await openTestFsm();
          try {
            // Tallies that follow from an empty store: through effects, and across a restore.
            await written.fsm.countRuns(0);
            await copy.fsm.countRuns(0);
            await one.apply(...all);
            const hash = await t.fsm.stateHash();
            expect(await one.fsm.stateHash()).toBe(hash);
            // A replica that writes every call's effects instead of evaluating: the same bytes,
            // counts, applied index and ready index.
            for (const fx of effects) {
              if (fx instanceof Uint8Array) expect(await written.fsm.applyEffects(fx)).toBe('applied');
              else await written.fsm.apply(fx);
            }
            expect(await written.fsm.stateHash()).toBe(hash);
            expect(await written.fsm.appliedIndex()).toBe(await t.fsm.appliedIndex());
            expect(await written.fsm.runCounts()).toEqual(await t.fsm.runCounts());
            expect(written.fsm.readyEntries({ limit: 10_000 })).toEqual(t.fsm.readyEntries({ limit: 10_000 }));
            // Ended-runs tallies: followed through effects, seeded from a store applied in one
            // call, and kept live on the original all agree.
            const live = await endedCounts(t);
            expect(await endedCounts(written)).toEqual(live);
            expect(await endedCounts(one)).toEqual(live);
            const snap = await t.fsm.snapshot();
            try {
              await copy.fsm.restore({ index: snap.appliedIndex, term: 1, conf: { voters: [] } }, snap.chunks());
            } finally {
              await snap.close();
            }
            expect(await copy.fsm.stateHash()).toBe(hash);
            // The in-memory ready index is derived state: the same on a replica that applied the
            // log in one call, and rebuilt whole from the restored records.
            const ready = t.fsm.readyEntries({ limit: 10_000 });
            expect(one.fsm.readyEntries({ limit: 10_000 })).toEqual(ready);
            expect(copy.fsm.readyEntries({ limit: 10_000 })).toEqual(ready);
            // A restore drops the tally the copy kept of its empty store: it counts the snapshot's runs.
            expect(await endedCounts(copy)).toEqual(live);
            // The replica that wrote effects carries on like the original (its in-memory counts, which
            // apply adds to, are right too): one more evaluated call on both gives the same bytes.
            const later = now + 7 * 86_400_000;
            const more: FsmCommand[] = [
              { type: 'fireRuns', nowMs: later, misfireThresholdMs: THRESHOLD, items: JOBS.map((jobId) => ({ jobId, slotMs: later })) },
              { type: 'cancelRuns', nowMs: later, items: [...m.runs.keys()].map((runId) => ({ runId, reason: 'end' })) },
            ];
            const at = t.nextIndex();
            const entries = more.map((c, i) => ({ term: 1, index: at + i, type: 'normal' as const, data: encodeCommand(c) }));
            const a = await t.fsm.apply(entries);
            expect(await written.fsm.apply(entries)).toEqual(a);
            expect(await written.fsm.stateHash()).toBe(await t.fsm.stateHash());
            expect(await endedCounts(written)).toEqual(await endedCounts(t));
          } finally {
            await one.close();
            await copy.close();
            await written.close();
          }
        } finally {
          await t.close();
        }
      }),
      { numRuns: 60, endOnFailure: true },
    );
  });
});
