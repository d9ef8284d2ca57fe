// The fault vocabulary of the nemesis: kinds, the families `--faults` selects, and which kinds
// need a server hook that may not exist yet (those are left out of a schedule and reported).

export type FaultFamily = 'kill' | 'pause' | 'partition' | 'clock' | 'crashpoints' | 'membership';

export const FAULT_FAMILIES: readonly FaultFamily[] = ['kill', 'pause', 'partition', 'clock', 'crashpoints', 'membership'];

export const FAULT_KINDS = {
  // kill -9, then restart after the fault's duration
  'kill-one': 'kill',
  'kill-leader': 'kill',
  'kill-majority': 'kill',
  'kill-all': 'kill',
  // kill -9 of a worker process (then a fresh worker process takes its place)
  'kill-worker': 'kill',
  'kill-worker-before-effect': 'kill',
  'kill-worker-after-effect': 'kill',
  // SIGSTOP, SIGCONT after the duration (longer than an election timeout / a lease)
  'pause-leader': 'pause',
  'pause-follower': 'pause',
  'pause-worker': 'pause',
  // through the per-directed-link proxies, or with --netns in the kernel (link down, nftables
  // drops; chaos/net/kernel-network.ts — no link-delay there)
  'partition-isolate-one': 'partition',
  'partition-isolate-leader': 'partition',
  'partition-majority-minority': 'partition',
  'partition-ring': 'partition',
  'partition-one-way': 'partition',
  'partition-worker-leader': 'partition',
  'link-delay': 'partition',
  'link-loss': 'partition',
  // an offset on the node's wall clock (Date.now), injected by chaos/preload/node-faults.mjs
  'clock-jump-one': 'clock',
  'clock-jump-leader': 'clock',
  'clock-drift-leader': 'clock',
  'clock-drift-one': 'clock',
  // the node exits at a persistence point (chaos/preload/node-faults.mjs), then restarts
  'crash-before-sync': 'crashpoints',
  'crash-after-sync': 'crashpoints',
  'crash-snapshot-save': 'crashpoints',
  'crash-snapshot-install': 'crashpoints',
  'crash-compaction': 'crashpoints',
  // configuration changes made the operator's way, `herald server --join` and `herald cluster
  // add|promote|remove` (chaos/nemesis/membership-moves.ts):
  // - replace-node: kill -9 a node and wipe its data dir (a dead disk); then a new incarnation
  //   joins, is added as a learner, promoted once caught up, and the old one removed (or, keeping
  //   the member id, the old one removed first and the new incarnation added under its id)
  // - grow-shrink: n → n+2 → n: two nodes join and are promoted, later two voters (the leader
  //   sometimes) are removed and their machines retired
  'replace-node': 'membership',
  'grow-shrink': 'membership',
} as const satisfies Record<string, FaultFamily>;

/**
 * Kinds scheduled only when named (`--kinds`, ChaosOptions.kinds), never by a family alone: adding
 * them to a family would change every existing seed's schedule.
 * - kill-all-leader-last: kill -9 every node at once, restart all but the old leader, and the old
 *   leader only once the others agreed on a leader (power back in some order). Safe Raft loses
 *   nothing (every committed entry is durable on a majority, so on one of the others); a node that
 *   acknowledged writes it had not made durable loses them (the skip-fsync negative control).
 * - pause-worker-busy: SIGSTOP, past its lease, of the worker executing the newest unfinished run
 *   of a long (`slow-`) job, so the run is re-claimed and still running under its successor when
 *   the paused holder wakes and reports (the accept-stale-tokens negative control).
 */
export const OPT_IN_FAULT_KINDS = {
  'kill-all-leader-last': 'kill',
  'pause-worker-busy': 'pause',
} as const satisfies Record<string, FaultFamily>;

export type FaultKind = keyof typeof FAULT_KINDS | keyof typeof OPT_IN_FAULT_KINDS;

/** Every kind a family selects (opt-in kinds excluded). */
export const ALL_FAULT_KINDS = Object.keys(FAULT_KINDS) as FaultKind[];

export function isFaultKind(k: string): k is FaultKind {
  return k in FAULT_KINDS || k in OPT_IN_FAULT_KINDS;
}

export function familyOf(kind: FaultKind): FaultFamily {
  return kind in OPT_IN_FAULT_KINDS ? OPT_IN_FAULT_KINDS[kind as keyof typeof OPT_IN_FAULT_KINDS] : FAULT_KINDS[kind as keyof typeof FAULT_KINDS];
}

/** Parses `--faults all|kill|pause|partition|clock|crashpoints|membership` (comma-separated list allowed). */
export function parseFaultFamilies(text: string): FaultFamily[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) throw new Error('--faults: empty');
  if (parts.includes('all')) return [...FAULT_FAMILIES];
  if (parts.includes('none')) return [];
  for (const p of parts) {
    if (!(FAULT_FAMILIES as readonly string[]).includes(p)) {
      throw new Error(`--faults: unknown family "${p}" (use all, none or ${FAULT_FAMILIES.join(', ')})`);
    }
  }
  return parts as FaultFamily[];
}

/** What the cluster under test supports; kinds outside it are not scheduled. */
export interface FaultCapabilities {
  /** Scheduler processes with workers (worker faults need them). */
  workers: boolean;
  /** Nodes with more than one peer (partitions need 3+ nodes). */
  nodes: number;
  clock: boolean;
  crashpoints: boolean;
}

/** The kinds of the families (plus the opt-in kinds named in `optIn`) this cluster supports. */
export function availableKinds(families: readonly FaultFamily[], caps: FaultCapabilities, optIn: readonly FaultKind[] = []): FaultKind[] {
  const optInKinds = (Object.keys(OPT_IN_FAULT_KINDS) as FaultKind[]).filter((k) => optIn.includes(k));
  return [...ALL_FAULT_KINDS, ...optInKinds].filter((k) => {
    const fam = familyOf(k);
    if (!families.includes(fam)) return false;
    if (k.includes('worker') && !caps.workers) return false;
    if (fam === 'clock' && !caps.clock) return false;
    if (fam === 'crashpoints' && !caps.crashpoints) return false;
    if (k === 'partition-ring' && caps.nodes < 5) return false;
    return true;
  });
}
