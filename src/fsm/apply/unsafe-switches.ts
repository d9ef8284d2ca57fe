// Deliberately broken behaviours for the chaos suite's negative controls (issue 8): the suite runs
// with one of them on and asserts that its checkers catch the damage. Off by default, and refused
// unless the process runs with HERALD_UNSAFE_TEST_SWITCHES=1, so no configuration mistake can turn
// them on in production. Like every apply option they must be equal on all nodes of a cluster.
//
// Two layers obey each switch: the FSM (an option of the state machine it was opened with) and the
// leader's services, whose own checks would otherwise stop the broken input before it reaches
// apply (the result batcher's holder check, the heartbeat's lease-lost answers, the fire
// scheduler's wheel). The leader reads them from its node's state machine (`unsafe`), so both
// layers always agree and two nodes in one process may run with different switches.
import { HeraldError } from '../../herald-error.js';
import { UNSAFE_ENV, unsafeOptedIn } from '../../raft/unsafe-opt-in.js';

export { UNSAFE_ENV };

export interface UnsafeSwitches {
  /** finish/renew/expire ignore the fencing token (a stale worker's report is accepted). */
  readonly acceptStaleTokens?: boolean;
  /** fireRuns ignores the fire cursor and existing runs: a slot fired twice runs twice (breaks I1). */
  readonly skipSlotCheck?: boolean;
  /** PauseJob records no MISSED run for due slots that were never fired: resume skips them silently (breaks I2). */
  readonly forgetMissedOnPause?: boolean;
  /** Leader only: a hello's held run is re-attached by run id and holder, its token unchecked (a superseded holder is told to carry on). */
  readonly adoptWithoutTokenCheck?: boolean;
  /** Leader only: at takeover the leases of RUNNING runs get no grace (they expire at the first sweep while their holders still run them). */
  readonly dropClaimLeaseOnFailover?: boolean;
}

/** The switches in force; throws when any is on without the environment opt-in. */
export function checkUnsafeSwitches(s: UnsafeSwitches | undefined, env: NodeJS.ProcessEnv = process.env): Required<UnsafeSwitches> {
  const on = {
    acceptStaleTokens: s?.acceptStaleTokens === true,
    skipSlotCheck: s?.skipSlotCheck === true,
    forgetMissedOnPause: s?.forgetMissedOnPause === true,
    adoptWithoutTokenCheck: s?.adoptWithoutTokenCheck === true,
    dropClaimLeaseOnFailover: s?.dropClaimLeaseOnFailover === true,
  };
  if (Object.values(on).some((v) => v) && !unsafeOptedIn(env)) {
    throw new HeraldError('INVALID_ARGUMENT', `unsafe FSM switches are for negative-control tests only; set ${UNSAFE_ENV}=1 to allow them`);
  }
  return Object.freeze(on);
}
