// Deliberately broken behaviours for the chaos suite's negative controls (issue 8): the suite runs
// with one of them on and asserts that its checkers catch the damage. Off by default, and refused
// unless the process runs with HERALD_UNSAFE_TEST_SWITCHES=1, so no configuration mistake can turn
// them on in production. Like every apply option they must be equal on all nodes of a cluster.
import { HeraldError } from '../herald-error.js';

export interface UnsafeSwitches {
  /** finish/renew/expire ignore the fencing token (a stale worker's report is accepted). */
  readonly acceptStaleTokens?: boolean;
  /** fireRuns ignores the fire cursor and existing runs: a slot fired twice runs twice (breaks I1). */
  readonly skipSlotCheck?: boolean;
}

export const UNSAFE_ENV = 'HERALD_UNSAFE_TEST_SWITCHES';

/** The switches in force; throws when any is on without the environment opt-in. */
export function checkUnsafeSwitches(s: UnsafeSwitches | undefined, env: NodeJS.ProcessEnv = process.env): Required<UnsafeSwitches> {
  const on = { acceptStaleTokens: s?.acceptStaleTokens === true, skipSlotCheck: s?.skipSlotCheck === true };
  if ((on.acceptStaleTokens || on.skipSlotCheck) && env[UNSAFE_ENV] !== '1') {
    throw new HeraldError('INVALID_ARGUMENT', `unsafe FSM switches are for negative-control tests only; set ${UNSAFE_ENV}=1 to allow them`);
  }
  return on;
}
