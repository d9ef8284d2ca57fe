// Deliberate bugs in the driver (and the simulator's ports), enabled per driver instance only by
// the simulator and the negative-control tests, to show its checkers catch each ordering bug the
// runtime could have. Never set in production.

export type DriverMutation =
  /** Committed entries count as durable up to the stored last index, even those this Ready replaces (issue 26, fix 1). */
  | 'apply-before-durable'
  /** A Ready's messages (votes included) go out before its term, vote and entries are written. */
  | 'send-vote-before-persist'
  /** A follower writing the leader's effects counts every gathered entry as applied, not only those the effects cover. */
  | 'apply-effects-at-wrong-index'
  /** The log keeps a conflicting suffix beyond the new entries (a LogSink mutation: the simulator's sink honours it). */
  | 'skip-conflict-truncation'
  /** The state machine's I/O failure becomes a rejected result for those entries instead of stopping the node. */
  | 'io-error-as-rejection';

export const ALL_DRIVER_MUTATIONS: readonly DriverMutation[] = [
  'apply-before-durable',
  'send-vote-before-persist',
  'apply-effects-at-wrong-index',
  'skip-conflict-truncation',
  'io-error-as-rejection',
];

const NONE: ReadonlySet<DriverMutation> = new Set();

export function noDriverMutations(): ReadonlySet<DriverMutation> {
  return NONE;
}
