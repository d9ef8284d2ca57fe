// Fencing and re-executions (I3): every execution of a run is explained by the run's attempt
// history, tokens only grow, and no result or effect from a superseded token was accepted.
//
// - A handler invocation (recorded by the ledger) carries its fencing token. It must be the
//   token of one of the run's attempts; the first attempt's invocation is the execution, any
//   later one is a re-execution whose cause is how the attempt before it ended: lease lost
//   (LEASE_EXPIRED), a retry after a failure (FAILED), an execution timeout (TIMED_OUT). A
//   re-execution after a SUCCEEDED or CANCELLED attempt, a token invoked twice, or a token the
//   log never issued is unexplained: a violation.
// - staleAccepted counts results the server accepted from a superseded attempt (a SUCCEEDED
//   attempt that is not the last one; a SUCCEEDED run whose last attempt did not succeed), and
//   attempt outcomes the ledger contradicts: the chaos handler reports success only after the
//   ledger accepted its effect, and fails only before writing one, so an attempt recorded
//   SUCCEEDED without an accepted effect under its token, or FAILED with one, got another
//   holder's report; plus effects the ledger accepted below a token it had already seen.
import { AttemptOutcome, RunState, type Run } from '../../src/gen/herald/v1/run.js';
import type { EffectRecord, LedgerSnapshot } from '../ledger/ledger-state.js';

export type ReExecutionCause = 'lease-lost' | 'retry-after-failure' | 'timeout' | 'unexplained';

export interface FencingCheckResult {
  ok: boolean;
  runsChecked: number;
  invocations: number;
  reExecutions: number;
  causes: Record<ReExecutionCause, number>;
  staleAccepted: number;
  tokenOrderViolations: number;
  unknownTokens: number;
  problems: string[];
}

const CAUSE: Partial<Record<AttemptOutcome, ReExecutionCause>> = {
  [AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED]: 'lease-lost',
  [AttemptOutcome.ATTEMPT_OUTCOME_FAILED]: 'retry-after-failure',
  [AttemptOutcome.ATTEMPT_OUTCOME_TIMED_OUT]: 'timeout',
};

/** Why attempt `index` (0-based) of a run ran again after the one before it. */
export function causeOf(run: Run, index: number): ReExecutionCause {
  const prev = run.attempts[index - 1];
  if (!prev) return 'unexplained';
  return CAUSE[prev.outcome] ?? 'unexplained';
}

function groupByRun(records: readonly EffectRecord[]): Map<string, EffectRecord[]> {
  const m = new Map<string, EffectRecord[]>();
  for (const r of records) {
    let g = m.get(r.runId);
    if (!g) m.set(r.runId, (g = []));
    g.push(r);
  }
  return m;
}

export function checkFencing(
  runs: readonly Run[],
  ledger: LedgerSnapshot,
  opts: { deletedJobs?: ReadonlySet<string>; successSkewMs?: number } = {},
): FencingCheckResult {
  const successSkewMs = opts.successSkewMs ?? 1_000;
  const problems: string[] = [];
  const note = (p: string) => {
    if (problems.length < 20) problems.push(p);
  };
  const causes: Record<ReExecutionCause, number> = { 'lease-lost': 0, 'retry-after-failure': 0, timeout: 0, unexplained: 0 };
  let staleAccepted = 0;
  let tokenOrderViolations = 0;
  let unknownTokens = 0;
  let reExecutions = 0;
  const byId = new Map(runs.map((r) => [r.id, r]));

  for (const run of runs) {
    for (let i = 1; i < run.attempts.length; i++) {
      if (!(run.attempts[i]!.fencingToken > run.attempts[i - 1]!.fencingToken)) {
        tokenOrderViolations++;
        note(`${run.id}: attempt ${i + 1} token ${run.attempts[i]!.fencingToken} is not above attempt ${i}'s ${run.attempts[i - 1]!.fencingToken}`);
      }
    }
    const last = run.attempts.length - 1;
    run.attempts.forEach((a, i) => {
      if (i < last && a.outcome === AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED) {
        staleAccepted++;
        note(`${run.id}: attempt ${a.number} (token ${a.fencingToken}) succeeded but a later attempt exists: a superseded result was accepted`);
      }
    });
    if (run.state === RunState.RUN_STATE_SUCCEEDED && (last < 0 || run.attempts[last]!.outcome !== AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED)) {
      staleAccepted++;
      note(`${run.id}: SUCCEEDED but its last attempt did not succeed`);
    }
  }

  // Attempt outcomes against the ledger's accepted effects (by run and token, first arrival).
  const acceptedTokens = new Map<string, Map<number, number>>();
  for (const e of [...ledger.effects, ...ledger.replays]) {
    let m = acceptedTokens.get(e.runId);
    if (!m) acceptedTokens.set(e.runId, (m = new Map()));
    m.set(e.fencingToken, Math.min(m.get(e.fencingToken) ?? Infinity, e.receivedMs));
  }
  for (const run of runs) {
    const tokens = acceptedTokens.get(run.id) ?? new Map<number, number>();
    for (const a of run.attempts) {
      const wrote = tokens.has(a.fencingToken);
      if (a.outcome === AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED && !wrote) {
        staleAccepted++;
        note(`${run.id}: attempt ${a.number} (token ${a.fencingToken}) recorded SUCCEEDED, but no effect under its token was accepted`);
      } else if (a.outcome === AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED && a.endedUnixMs > 0 && a.endedUnixMs < tokens.get(a.fencingToken)! - successSkewMs) {
        // Its holder reports only after its effect: a success recorded well before that effect
        // existed came from someone else (cluster time vs the ledger's clock, hence the skew).
        staleAccepted++;
        note(`${run.id}: attempt ${a.number} (token ${a.fencingToken}) recorded SUCCEEDED ${tokens.get(a.fencingToken)! - a.endedUnixMs} ms before its effect arrived`);
      } else if (a.outcome === AttemptOutcome.ATTEMPT_OUTCOME_FAILED && wrote) {
        staleAccepted++;
        note(`${run.id}: attempt ${a.number} (token ${a.fencingToken}) recorded FAILED after its effect was accepted: another holder's report`);
      }
    }
  }

  // Effects accepted below a token the ledger had already seen (recomputed from its raw records).
  const writes = groupByRun([...ledger.invocations, ...ledger.effects, ...ledger.replays]);
  const acceptedEffects = new Set([...ledger.effects, ...ledger.replays]);
  for (const [runId, recs] of writes) {
    let max = 0;
    // Arrival order: the ledger's sequence number (receivedMs ties within a millisecond).
    for (const r of [...recs].sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0) || a.receivedMs - b.receivedMs)) {
      if (acceptedEffects.has(r) && r.fencingToken < max) {
        staleAccepted++;
        note(`${runId}: the ledger accepted token ${r.fencingToken} after seeing ${max}`);
      }
      max = Math.max(max, r.fencingToken);
    }
  }

  const invocations = groupByRun(ledger.invocations);
  for (const [runId, recs] of invocations) {
    const run = byId.get(runId);
    if (!run) {
      const jobId = runId.split('@')[0]!;
      if (!opts.deletedJobs?.has(jobId)) {
        unknownTokens += recs.length;
        note(`${runId}: executed ${recs.length}x but the cluster has no such run`);
      }
      continue;
    }
    const seen = new Set<number>();
    let maxSeen = 0;
    const evidence = () =>
      `attempts ${run.attempts.map((a) => `#${a.number} t${a.fencingToken} ${a.workerId} ${AttemptOutcome[a.outcome]?.replace('ATTEMPT_OUTCOME_', '')}`).join(', ')}; ` +
      `executions ${recs.map((r) => `t${r.fencingToken} ${r.workerId} @${r.receivedMs}`).join(', ')}`;
    for (const r of [...recs].sort((x, y) => x.receivedMs - y.receivedMs)) {
      const idx = run.attempts.findIndex((a) => a.fencingToken === r.fencingToken);
      if (idx < 0) {
        unknownTokens++;
        note(`${runId}: executed with token ${r.fencingToken}, which none of its attempts holds (${evidence()})`);
        continue;
      }
      if (seen.has(r.fencingToken)) {
        reExecutions++;
        causes.unexplained++;
        note(`${runId}: token ${r.fencingToken} executed twice (${evidence()})`);
        continue;
      }
      seen.add(r.fencingToken);
      const newest = r.fencingToken > maxSeen;
      maxSeen = Math.max(maxSeen, r.fencingToken);
      // The first execution (earlier attempts may never have reached the handler: worker died).
      if (seen.size === 1) continue;
      reExecutions++;
      // A newer attempt re-executes because of how the one before it ended. An older attempt
      // starting after a newer one is a holder that was frozen past its lease (a zombie): fine
      // only if that attempt's lease really expired (its effect is then fenced by the sink).
      const cause: ReExecutionCause = newest
        ? causeOf(run, idx)
        : run.attempts[idx]!.outcome === AttemptOutcome.ATTEMPT_OUTCOME_LEASE_EXPIRED
          ? 'lease-lost'
          : 'unexplained';
      causes[cause]++;
      if (cause === 'unexplained') note(`${runId}: attempt ${idx + 1} executed without a lost lease or failure to explain it (${evidence()})`);
    }
  }

  const ok = staleAccepted === 0 && tokenOrderViolations === 0 && unknownTokens === 0 && causes.unexplained === 0;
  return {
    ok,
    runsChecked: runs.length,
    invocations: ledger.invocations.length,
    reExecutions,
    causes,
    staleAccepted,
    tokenOrderViolations,
    unknownTokens,
    problems,
  };
}
