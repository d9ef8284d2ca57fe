// Deliberate scheduler bugs the simulator must catch (its negative controls). Two are the
// state machine's own unsafe switches (apply/unsafe-switches.ts, which the leader obeys too); the
// others are built by the simulation's composition of a node, so production code carries no
// switch for them:
// - fire-by-local-wall-clock: the leader's services take the node's own wall clock for cluster
//   time (a skewed or jumped clock moves fires).
export const SCHED_MUTATIONS = ['skip-slot-check', 'accept-stale-tokens', 'fire-by-local-wall-clock'] as const;

export type SchedMutation = (typeof SCHED_MUTATIONS)[number];

export function isSchedMutation(m: string): m is SchedMutation {
  return (SCHED_MUTATIONS as readonly string[]).includes(m);
}
