// The chaos checkers on synthetic histories: a clean history passes, and each planted violation
// (lost slot, double fire, stale token, early start, paused job firing, non-linearizable read,
// lost create, late recovery, divergent replica) is caught and counted.
import { describe, expect, it } from 'vitest';
import { AttemptOutcome, Run, RunState } from '../../src/gen/herald/v1/run.js';
import { jobSpec, every, at } from '../../src/client/job-spec-builders.js';
import type { EffectRecord, LedgerSnapshot } from '../../chaos/ledger/ledger-state.js';
import type { JobTimeline } from '../../chaos/workload/job-timeline.js';
import { checkSlots } from '../../chaos/checkers/slots-checker.js';
import { checkFencing } from '../../chaos/checkers/fencing-checker.js';
import { checkControlPlane } from '../../chaos/checkers/control-plane-checker.js';
import { checkRecovery } from '../../chaos/checkers/recovery-checker.js';
import { checkConvergence } from '../../chaos/checkers/convergence-checker.js';
import type { DocOperation } from '../../src/raft/linearizability/document-model.js';

const T0 = 1_800_000_000_000; // created at; every 1 s anchored at the epoch
const job = (over: Partial<JobTimeline> = {}): JobTimeline => ({
  jobId: 'j1',
  kind: 'every',
  spec: jobSpec({ taskType: 'chaos', schedule: every('1s') }),
  createdUnixMs: T0,
  failAttempts: 0,
  events: [],
  ...over,
});

const okRun = (jobId: string, slot: number, token: number, extra: Partial<Run> = {}) =>
  Run.fromPartial({
    id: `${jobId}@${slot}`,
    jobId,
    slotUnixMs: slot,
    scheduledUnixMs: slot,
    createdUnixMs: slot + 5,
    state: RunState.RUN_STATE_SUCCEEDED,
    attempt: 1,
    attempts: [{ number: 1, fencingToken: token, outcome: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, workerId: 'w1' }],
    ...extra,
  });

const rec = (runId: string, token: number, startedMs: number, receivedMs = startedMs + 5): EffectRecord => ({
  runId,
  jobId: runId.split('@')[0]!,
  slotMs: Number(runId.split('@')[1]!.split('~')[0]),
  fencingToken: token,
  attempt: 1,
  workerId: 'w1',
  startedMs,
  receivedMs,
});

/** A clean world: slots T0+1s .. T0+10s each fired once, executed once, one effect each. */
function clean(): { runs: Run[]; ledger: LedgerSnapshot } {
  const runs: Run[] = [];
  const ledger: LedgerSnapshot = { invocations: [], effects: [], replays: [], staleRejected: [] };
  for (let i = 1; i <= 10; i++) {
    const slot = T0 + i * 1000;
    runs.push(okRun('j1', slot, 100 + i));
    ledger.invocations.push(rec(`j1@${slot}`, 100 + i, slot + 20));
    ledger.effects.push(rec(`j1@${slot}`, 100 + i, slot + 20));
  }
  return { runs, ledger };
}

const slots = (runs: Run[], ledger: LedgerSnapshot, jobs = [job()]) =>
  checkSlots({ jobs, runsByJob: new Map([['j1', runs]]), ledger, windowEndMs: T0 + 10_000, marginMs: 500 });

describe('slots checker', () => {
  it('passes a clean history and counts its slots and lateness', () => {
    const { runs, ledger } = clean();
    const r = slots(runs, ledger);
    expect(r.problems).toEqual([]);
    expect(r).toMatchObject({ ok: true, slotsChecked: 10, lost: 0, duplicateEffects: 0, unexpected: 0, early: 0 });
    expect(r.latenessMs).toMatchObject({ p50: 20, max: 20, samples: 10 });
  });

  it('counts a slot with no run as lost, but not one inside a pause window', () => {
    const { runs, ledger } = clean();
    const without = runs.filter((r) => r.slotUnixMs !== T0 + 4000);
    expect(slots(without, ledger)).toMatchObject({ ok: false, lost: 1 });
    const paused = job({ events: [{ type: 'pause', callMs: T0 + 3900, returnMs: T0 + 3950, ok: true }, { type: 'resume', callMs: T0 + 4100, returnMs: T0 + 4150, ok: true }] });
    expect(slots(without, ledger, [paused])).toMatchObject({ lost: 0 });
  });

  it('flags a run fired while the job was certainly paused as unexpected', () => {
    const { runs, ledger } = clean();
    const paused = job({ events: [{ type: 'pause', callMs: T0 + 2000, returnMs: T0 + 2100, ok: true }, { type: 'resume', callMs: T0 + 9000, returnMs: T0 + 9100, ok: true }] });
    const r = slots(runs, ledger, [paused]);
    expect(r.unexpected).toBeGreaterThanOrEqual(5);
    expect(r.ok).toBe(false);
  });

  it('flags a run off the schedule, an effect of a SKIPPED run, an early start and a success without effect', () => {
    const { runs, ledger } = clean();
    runs.push(okRun('j1', T0 + 4500, 200));
    runs[0] = okRun('j1', T0 + 1000, 101, { state: RunState.RUN_STATE_SKIPPED, attempts: [] });
    ledger.invocations[2] = rec(`j1@${T0 + 3000}`, 103, T0 + 2500);
    const r = slots(runs, ledger);
    expect(r.unexpected).toBe(2); // off-schedule run + effect of a SKIPPED run
    expect(r.early).toBe(1);
    expect(r.missingEffects).toBe(1); // the off-schedule run SUCCEEDED with no effect
    expect(r.ok).toBe(false);
  });

  it('counts two applied effects for one slot, and an unexplained replay, as duplicates', () => {
    const { runs, ledger } = clean();
    ledger.effects.push({ ...rec(`j1@${T0 + 1000}~m0`, 300, T0 + 1100), slotMs: T0 + 1000 });
    ledger.effects.push(rec(`j1@${T0 + 2000}`, 102, T0 + 2100)); // a second applied effect for slot 2
    ledger.replays.push(rec(`j1@${T0 + 3000}`, 999, T0 + 3100)); // token the run never issued
    const r = slots(runs, ledger);
    expect(r.duplicateEffects).toBe(2);
  });

  it('counts a non-terminal run in the window, and a job gone without a delete as lost slots', () => {
    const { runs, ledger } = clean();
    runs[9] = okRun('j1', T0 + 10_000, 110, { state: RunState.RUN_STATE_RUNNING });
    expect(slots(runs, ledger)).toMatchObject({ notTerminal: 1, ok: false });
    const r = checkSlots({ jobs: [job()], runsByJob: new Map(), ledger, windowEndMs: T0 + 10_000, marginMs: 500 });
    expect(r.lost).toBe(10); // every slot after created + margin
  });

  it('a deleted job may not take effect for slots after its delete returned', () => {
    const { ledger } = clean();
    const deleted = job({ events: [{ type: 'delete', callMs: T0 + 5000, returnMs: T0 + 5100, ok: true }] });
    const r = checkSlots({ jobs: [deleted], runsByJob: new Map(), ledger, windowEndMs: T0 + 10_000, marginMs: 500 });
    expect(r.unexpected).toBe(5); // slots 6..10 s
  });

  it('a one-off job expects exactly its one slot', () => {
    const oneOff = job({ jobId: 'o1', spec: jobSpec({ taskType: 'chaos', schedule: at(T0 + 3000) }) });
    const none = checkSlots({ jobs: [oneOff], runsByJob: new Map([['o1', []]]), ledger: clean().ledger, windowEndMs: T0 + 10_000, marginMs: 500 });
    expect(none.lost).toBe(1);
    const fired = checkSlots({ jobs: [oneOff], runsByJob: new Map([['o1', [okRun('o1', T0 + 3000, 5)]]]), ledger: { invocations: [], effects: [rec(`o1@${T0 + 3000}`, 5, T0 + 3010)], replays: [], staleRejected: [] }, windowEndMs: T0 + 10_000, marginMs: 500 });
    expect(fired).toMatchObject({ ok: true, slotsChecked: 1 });
  });
});

describe('fencing checker', () => {
  const twoAttempts = (firstOutcome: AttemptOutcome, lastOutcome = AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED) =>
    okRun('j1', T0 + 1000, 0, {
      attempt: 2,
      attempts: [
        { number: 1, fencingToken: 10, outcome: firstOutcome, workerId: 'w1', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
        { number: 2, fencingToken: 20, outcome: lastOutcome, workerId: 'w2', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
      ],
    });
  // Executions as given; the effect of the run's final, successful attempt (token 20) applied.
  const ledgerOf = (...recs: EffectRecord[]): LedgerSnapshot => ({ invocations: recs, effects: [rec(`j1@${T0 + 1000}`, 20, T0 + 5000)], replays: [], staleRejected: [] });

  it('passes a clean history', () => {
    const { runs, ledger } = clean();
    expect(checkFencing(runs, ledger)).toMatchObject({ ok: true, reExecutions: 0, staleAccepted: 0 });
  });

  it('counts re-executions by cause: lease lost, retry after failure', () => {
    const l = ledgerOf(rec(`j1@${T0 + 1000}`, 10, T0 + 1010), rec(`j1@${T0 + 1000}`, 20, T0 + 5000));
    expect(checkFencing([twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED)], l)).toMatchObject({ ok: true, reExecutions: 1, causes: { 'lease-lost': 1 } });
    expect(checkFencing([twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_FAILED)], l)).toMatchObject({ ok: true, causes: { 'retry-after-failure': 1 } });
  });

  it('fails a re-execution after success, a token executed twice, and a token no attempt holds', () => {
    const l = ledgerOf(rec(`j1@${T0 + 1000}`, 10, T0 + 1010), rec(`j1@${T0 + 1000}`, 20, T0 + 5000));
    const afterSuccess = checkFencing([twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED)], l);
    expect(afterSuccess.ok).toBe(false);
    expect(afterSuccess.staleAccepted).toBe(2); // attempt 1 SUCCEEDED yet attempt 2 exists, and without an effect
    expect(afterSuccess.causes.unexplained).toBe(1);
    const twice = checkFencing([okRun('j1', T0 + 1000, 20)], ledgerOf(rec(`j1@${T0 + 1000}`, 20, T0 + 1010), rec(`j1@${T0 + 1000}`, 20, T0 + 1500)));
    expect(twice).toMatchObject({ ok: false, causes: { unexplained: 1 } });
    const unknown = checkFencing([okRun('j1', T0 + 1000, 20)], ledgerOf(rec(`j1@${T0 + 1000}`, 7, T0 + 1010)));
    expect(unknown).toMatchObject({ ok: false, unknownTokens: 1 });
  });

  it('fails a SUCCEEDED run whose last attempt did not succeed, and decreasing tokens', () => {
    const stale = twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED, AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED);
    expect(checkFencing([stale], ledgerOf())).toMatchObject({ ok: false, staleAccepted: 1 });
    const down = twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED);
    down.attempts[1]!.fencingToken = 5;
    expect(checkFencing([down], ledgerOf())).toMatchObject({ ok: false, tokenOrderViolations: 1 });
  });

  it('fails an effect the ledger accepted below a token it had seen', () => {
    const hi = rec(`j1@${T0 + 1000}`, 20, T0 + 1000, T0 + 1000);
    const lo = rec(`j1@${T0 + 1000}`, 10, T0 + 1000, T0 + 2000);
    const hiEffect = rec(`j1@${T0 + 1000}`, 20, T0 + 1000, T0 + 3000);
    const r = checkFencing([twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED)], { invocations: [hi], effects: [lo], replays: [hiEffect], staleRejected: [] });
    expect(r.staleAccepted).toBe(1);
  });

  it('fails attempt outcomes the ledger contradicts: SUCCEEDED without its effect, FAILED after its effect', () => {
    const inv = [rec(`j1@${T0 + 1000}`, 10, T0 + 1010), rec(`j1@${T0 + 1000}`, 20, T0 + 5000)];
    const noEffect = checkFencing([twoAttempts(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED)], { invocations: inv, effects: [], replays: [], staleRejected: [] });
    expect(noEffect).toMatchObject({ ok: false, staleAccepted: 1 });
    // Attempt 2 wrote its effect, yet is recorded FAILED (a stale holder's failure report was
    // accepted); attempt 3 then replays it, which looks like an ordinary retry on its own.
    const misattributed = okRun('j1', T0 + 1000, 0, {
      attempt: 3,
      attempts: [
        { number: 1, fencingToken: 10, outcome: AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED, workerId: 'w1', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
        { number: 2, fencingToken: 20, outcome: AttemptOutcome.ATTEMPT_OUTCOME_FAILED, workerId: 'w2', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
        { number: 3, fencingToken: 30, outcome: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, workerId: 'w3', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
      ],
    });
    const l: LedgerSnapshot = {
      invocations: [...inv, rec(`j1@${T0 + 1000}`, 30, T0 + 7000)],
      effects: [rec(`j1@${T0 + 1000}`, 20, T0 + 5000)],
      replays: [rec(`j1@${T0 + 1000}`, 30, T0 + 7000)],
      staleRejected: [],
    };
    expect(checkFencing([misattributed], l)).toMatchObject({ ok: false, staleAccepted: 1, causes: { 'retry-after-failure': 1 } });
  });
});

describe('control-plane checker', () => {
  const op = (input: DocOperation<string>['input'], call: number, ret: number, output?: DocOperation<string>['output']): DocOperation<string> => ({ input, call, return: ret, output });

  it('passes a linearizable history with unknown outcomes', () => {
    const h = [
      op({ kind: 'create', id: 'a', doc: 'x', idempotencyKey: 'k' }, 0, 10, { status: 'ok', version: 1 }),
      op({ kind: 'update', id: 'a', doc: 'y' }, 20, Infinity),
      op({ kind: 'get', id: 'a' }, 30, 40, { status: 'ok', doc: 'y', version: 2 }),
      op({ kind: 'get', id: 'a' }, 50, 60, { status: 'ok', doc: 'y', version: 2 }),
    ];
    expect(checkControlPlane(h)).toMatchObject({ ok: true, linearizable: true, operations: 4, unknownOutcomes: 1, lostCreates: 0 });
  });

  it('fails a stale read and a lost acknowledged create', () => {
    const stale = [
      op({ kind: 'create', id: 'a', doc: 'x' }, 0, 10, { status: 'ok', version: 1 }),
      op({ kind: 'update', id: 'a', doc: 'y' }, 20, 30, { status: 'ok', version: 2 }),
      op({ kind: 'get', id: 'a' }, 40, 50, { status: 'ok', doc: 'x', version: 1 }),
    ];
    const r = checkControlPlane(stale);
    expect(r.linearizable).toBe(false);
    expect(r.explanation).toMatch(/not linearizable/);
    const lost = [op({ kind: 'create', id: 'b', doc: 'x' }, 0, 10, { status: 'ok', version: 1 }), op({ kind: 'get', id: 'b' }, 20, 30, { status: 'not_found' })];
    expect(checkControlPlane(lost)).toMatchObject({ ok: false, linearizable: false, lostCreates: 1 });
  });
});

describe('recovery and convergence checkers', () => {
  const run = (slot: number, created: number) => Run.fromPartial({ id: `j@${slot}`, slotUnixMs: slot, createdUnixMs: created });
  it('recovery: leader and fire delays within bounds pass; a late fire or no leader fails', () => {
    const base = { healMs: 1000, windowEndMs: 60_000, bounds: { leaderMs: 5_000, fireMs: 1_000 } };
    expect(checkRecovery({ ...base, leaderSeenMs: 2500, runs: [run(1500, 6200), run(8000, 8050)] })).toMatchObject({ ok: true, leaderAfterHealMs: 1500, slotsAfterHeal: 2, lateFires: 0 });
    expect(checkRecovery({ ...base, leaderSeenMs: 2500, runs: [run(8000, 9500)] })).toMatchObject({ ok: false, lateFires: 1 });
    expect(checkRecovery({ ...base, leaderSeenMs: undefined, runs: [] }).ok).toBe(false);
  });

  it('convergence: equal applied index and hash pass; a differing hash or a missing node fails', () => {
    const n = (id: string, appliedIndex: number, stateHash: string | undefined) => ({ id, appliedIndex, stateHash });
    expect(checkConvergence([n('n1', 9, 'aa'), n('n2', 9, 'aa'), n('n3', 9, 'aa')], 3)).toMatchObject({ converged: true });
    expect(checkConvergence([n('n1', 9, 'aa'), n('n2', 9, 'ab'), n('n3', 9, 'aa')], 3).converged).toBe(false);
    expect(checkConvergence([n('n1', 9, 'aa'), n('n2', 8, 'aa')], 3).problems).toHaveLength(2);
  });
});

describe('fencing checker: late starts of superseded holders', () => {
  const run = (firstOutcome: AttemptOutcome) =>
    okRun('j1', T0 + 1000, 0, {
      attempt: 2,
      attempts: [
        { number: 1, fencingToken: 10, outcome: firstOutcome, workerId: 'w1', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
        { number: 2, fencingToken: 20, outcome: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, workerId: 'w2', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
      ],
    });
  // Attempt 2 starts first; the frozen holder of attempt 1 wakes up and starts after it.
  const l: LedgerSnapshot = { invocations: [rec(`j1@${T0 + 1000}`, 20, T0 + 5000), rec(`j1@${T0 + 1000}`, 10, T0 + 6000)], effects: [rec(`j1@${T0 + 1000}`, 20, T0 + 5000)], replays: [], staleRejected: [] };

  it('accepts a late start of an attempt whose lease expired, as a lease-lost re-execution', () => {
    expect(checkFencing([run(AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED)], l)).toMatchObject({ ok: true, reExecutions: 1, causes: { 'lease-lost': 1 } });
  });

  it('rejects a late start of an attempt whose lease did not expire', () => {
    expect(checkFencing([run(AttemptOutcome.ATTEMPT_OUTCOME_FAILED)], l)).toMatchObject({ ok: false, causes: { unexplained: 1 } });
  });
});

describe('fencing checker: a success recorded before its effect existed', () => {
  it('counts it as a stale report accepted (its holder reports only after the effect)', () => {
    const run = okRun('j1', T0 + 1000, 20);
    run.attempts[0]!.endedUnixMs = T0 + 2000;
    const at = (ms: number): LedgerSnapshot => ({ invocations: [rec(`j1@${T0 + 1000}`, 20, T0 + 1100)], effects: [rec(`j1@${T0 + 1000}`, 20, T0 + 1100, ms)], replays: [], staleRejected: [] });
    expect(checkFencing([run], at(T0 + 1900)).staleAccepted).toBe(0);
    expect(checkFencing([run], at(T0 + 2900)).staleAccepted).toBe(0); // within the skew
    expect(checkFencing([run], at(T0 + 9000))).toMatchObject({ ok: false, staleAccepted: 1 });
  });
});

describe('fencing checker: arrival order', () => {
  it('orders ledger records by their sequence number when receivedMs ties', () => {
    const run = okRun('j1', T0 + 1000, 0, {
      attempt: 2,
      attempts: [
        { number: 1, fencingToken: 10, outcome: AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED, workerId: 'w1', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
        { number: 2, fencingToken: 20, outcome: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED, workerId: 'w2', startedUnixMs: 0, endedUnixMs: 0, error: undefined },
      ],
    });
    // Same millisecond: the effect of token 10 arrived (seq 2) before the invocation of token 20 (seq 3).
    const inv10 = { ...rec(`j1@${T0 + 1000}`, 10, T0 + 1000, T0 + 2000), seq: 1 };
    const eff10 = { ...rec(`j1@${T0 + 1000}`, 10, T0 + 1000, T0 + 2000), seq: 2 };
    const inv20 = { ...rec(`j1@${T0 + 1000}`, 20, T0 + 1000, T0 + 2000), seq: 3 };
    const rep20 = { ...rec(`j1@${T0 + 1000}`, 20, T0 + 1000, T0 + 2001), seq: 4 };
    const ok = checkFencing([run], { invocations: [inv10, inv20], effects: [eff10], replays: [rep20], staleRejected: [] });
    expect(ok.staleAccepted).toBe(0);
    const bad = checkFencing([run], { invocations: [inv10, { ...inv20, seq: 2 }], effects: [{ ...eff10, seq: 3 }], replays: [rep20], staleRejected: [] });
    expect(bad.staleAccepted).toBe(1);
  });
});
