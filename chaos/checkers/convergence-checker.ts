// Convergence (I5 as observed): after heal and quiescence, every node applied the same index and
// holds the same state (a hash over every key/value of its state machine's LevelDB).
export interface NodeState {
  id: string;
  appliedIndex: number;
  /** Hex digest of the state machine contents; undefined when it could not be read. */
  stateHash: string | undefined;
}

export interface ConvergenceCheckResult {
  ok: boolean;
  converged: boolean;
  nodes: NodeState[];
  problems: string[];
}

export function checkConvergence(nodes: readonly NodeState[], expectedNodes: number): ConvergenceCheckResult {
  const problems: string[] = [];
  if (nodes.length !== expectedNodes) problems.push(`only ${nodes.length} of ${expectedNodes} nodes reported their state`);
  const applied = new Set(nodes.map((n) => n.appliedIndex));
  if (applied.size > 1) problems.push(`applied indexes differ: ${nodes.map((n) => `${n.id}=${n.appliedIndex}`).join(', ')}`);
  if (nodes.some((n) => n.stateHash === undefined)) problems.push(`no state hash from ${nodes.filter((n) => !n.stateHash).map((n) => n.id).join(', ')}`);
  const hashes = new Set(nodes.map((n) => n.stateHash));
  if (applied.size === 1 && hashes.size > 1) problems.push(`state hashes differ at index ${nodes[0]!.appliedIndex}: ${nodes.map((n) => `${n.id}=${n.stateHash?.slice(0, 12)}`).join(', ')}`);
  const converged = problems.length === 0;
  return { ok: converged, converged, nodes: [...nodes], problems };
}
