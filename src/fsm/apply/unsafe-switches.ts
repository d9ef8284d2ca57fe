// Deliberately broken behaviours for the chaos suite's negative controls (issue 8): the suite runs
// with one of them on and asserts that its checkers catch the damage. Off by default, and refused
// unless the process runs with HERALD_UNSAFE_TEST_SWITCHES=1, so no configuration mistake can turn
// them on in production. Like every apply option they must be equal on all nodes of a cluster.
//
// Two layers carry each switch: the FSM (passed as an apply option) and the leader's services,
// whose own checks would otherwise stop the broken input before it reaches apply (the result
// batcher's holder check, the heartbeat's lease-lost answers, the fire scheduler's wheel). The
// leader's side reads the process-wide switches that `herald server --unsafe-...` enabled: a
// test-only flag is a property of the process, and the leader code has no other channel to it.
import { HeraldError } from '../../herald-error.js';
import { UNSAFE_ENV, unsafeOptedIn } from '../../raft/unsafe-opt-in.js';

export { UNSAFE_ENV };

export interface UnsafeSwitches {
  /** finish/renew/expire ignore the fencing token (a stale worker's report is accepted). */
  readonly acceptStaleTokens?: boolean;
  /** fireRuns ignores the fire cursor and existing runs: a slot fired twice runs twice (breaks I1). */
  readonly skipSlotCheck?: boolean;
}

const OFF: Required<UnsafeSwitches> = Object.freeze({ acceptStaleTokens: false, skipSlotCheck: false });
let inForce: Required<UnsafeSwitches> = OFF;

/** The switches in force; throws when any is on without the environment opt-in. */
export function checkUnsafeSwitches(s: UnsafeSwitches | undefined, env: NodeJS.ProcessEnv = process.env): Required<UnsafeSwitches> {
  const on = { acceptStaleTokens: s?.acceptStaleTokens === true, skipSlotCheck: s?.skipSlotCheck === true };
  if ((on.acceptStaleTokens || on.skipSlotCheck) && !unsafeOptedIn(env)) {
    throw new HeraldError('INVALID_ARGUMENT', `unsafe FSM switches are for negative-control tests only; set ${UNSAFE_ENV}=1 to allow them`);
  }
  return on;
}

/** Turns the switches on for this process's leader services (checked like the FSM's). */
export function enableUnsafeSwitches(s: UnsafeSwitches, env: NodeJS.ProcessEnv = process.env): void {
  inForce = Object.freeze(checkUnsafeSwitches(s, env));
}

/** Back to safe (tests that enabled the switches in-process). */
export function resetUnsafeSwitches(): void {
  inForce = OFF;
}

/** The switches the leader services obey: all off unless enableUnsafeSwitches() was called. */
export function unsafeSwitches(): Required<UnsafeSwitches> {
  return inForce;
}
