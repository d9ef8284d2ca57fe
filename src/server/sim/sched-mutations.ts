// Deliberate scheduler bugs the simulator must catch (its negative controls). All but two are the
// state machine's own unsafe switches (apply/unsafe-switches.ts, off by default, refused without
// the test-only opt-in; the leader's services read them from their node's state machine):
// skip-slot-check, accept-stale-tokens, forget-missed-on-pause (FSM), adopt-without-token-check
// and drop-claim-lease-on-failover (leader only: WorkerLeases.reattach / adoptRunning). The
// others are built by the simulation's composition, so production code carries no switch for
// them:
// - fire-by-local-wall-clock: the leader's services take the node's own wall clock for cluster
//   time (a skewed or jumped clock moves fires);
// - cas-from-stale-replica: the control-plane client's CAS update is refused from a random
//   replica's applied job version when it differs (a follower's may be stale) instead of going
//   through the log — the bug of an API handler that short-cuts a CAS with a local read.
export const SCHED_MUTATIONS = [
  'skip-slot-check',
  'accept-stale-tokens',
  'fire-by-local-wall-clock',
  'forget-missed-on-pause',
  'adopt-without-token-check',
  'drop-claim-lease-on-failover',
  'cas-from-stale-replica',
] as const;

export type SchedMutation = (typeof SCHED_MUTATIONS)[number];

export function isSchedMutation(m: string): m is SchedMutation {
  return (SCHED_MUTATIONS as readonly string[]).includes(m);
}
