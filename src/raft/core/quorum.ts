// Majority arithmetic over a static voter set (etcd's quorum.MajorityConfig).

import type { NodeId } from '../types.js';

export type VoteResult = 'won' | 'lost' | 'pending';

/** The largest index that a majority of voters has matched. */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  if (voters.length === 0) return Infinity;
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  return matches[Math.floor(voters.length / 2)]!;
}

export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  const q = Math.floor(voters.length / 2) + 1;
  let granted = 0;
  let missing = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === undefined) missing++;
    else if (v) granted++;
  }
  if (granted >= q) return 'won';
  if (granted + missing >= q) return 'pending';
  return 'lost';
}

export function isQuorum(voters: readonly NodeId[], count: number): boolean {
  return count >= Math.floor(voters.length / 2) + 1;
}
