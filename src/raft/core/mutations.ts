// Deliberate bugs in the core, enabled only by the simulator and the negative-control tests to
// show that the checkers catch each class of safety violation. Never set in production.

export type CoreMutation =
  /** Commit an index as soon as a majority has it, even if its entry is from an older term (Figure 8). */
  | 'commit-previous-term'
  /** Mark term/vote changes as not needing fsync, so a reply can outlive a crash that loses them. */
  | 'reply-before-sync'
  /** Mark appended entries as not needing fsync, so an acknowledged entry can vanish in a crash. */
  | 'ack-unsynced-entries'
  /** Grant a vote to any candidate of the current term, even after voting for another. */
  | 'double-vote'
  /** Accept appends without checking that the previous entry's term matches. */
  | 'skip-log-matching'
  /** Grant votes without checking that the candidate's log is at least as up to date. */
  | 'skip-up-to-date-check'
  /** Answer ReadIndex at once, without confirming leadership with a heartbeat round. */
  | 'read-index-no-confirm'
  /** Count a learner's granted vote toward the voters' majority. */
  | 'count-learner-vote'
  /** Let a leader propose a configuration change while another is still uncommitted. */
  | 'two-pending-changes'
  /** Put a configuration in force when its entry commits instead of when it is appended. */
  | 'apply-conf-at-commit'
  /**
   * Enacted by the simulator, the operator's side: a node whose disk was wiped comes back under
   * its old incarnation as a voter (as a restart with --initial-cluster-state new would).
   */
  | 'wiped-rejoins-as-voter';

export const ALL_MUTATIONS: readonly CoreMutation[] = [
  'commit-previous-term',
  'reply-before-sync',
  'ack-unsynced-entries',
  'double-vote',
  'skip-log-matching',
  'skip-up-to-date-check',
  'read-index-no-confirm',
  'count-learner-vote',
  'two-pending-changes',
  'apply-conf-at-commit',
  'wiped-rejoins-as-voter',
];
