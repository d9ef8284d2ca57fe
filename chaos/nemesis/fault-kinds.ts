// The fault vocabulary of the nemesis: kinds, the families `--faults` selects, and which kinds
// need a server hook that may not exist yet (those are left out of a schedule and reported).

export type FaultFamily = 'kill' | 'pause' | 'partition' | 'clock' | 'crashpoints';

export const FAULT_FAMILIES: readonly FaultFamily[] = ['kill', 'pause', 'partition', 'clock', 'crashpoints'];

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
  // through the per-directed-link proxies
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
} as const satisfies Record<string, FaultFamily>;

export type FaultKind = keyof typeof FAULT_KINDS;

export const ALL_FAULT_KINDS = Object.keys(FAULT_KINDS) as FaultKind[];

export function familyOf(kind: FaultKind): FaultFamily {
  return FAULT_KINDS[kind];
}

/** Parses `--faults all|kill|pause|partition|clock|crashpoints` (comma-separated list allowed). */
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

export function availableKinds(families: readonly FaultFamily[], caps: FaultCapabilities): FaultKind[] {
  return ALL_FAULT_KINDS.filter((k) => {
    const fam = familyOf(k);
    if (!families.includes(fam)) return false;
    if (k.includes('worker') && !caps.workers) return false;
    if (fam === 'clock' && !caps.clock) return false;
    if (fam === 'crashpoints' && !caps.crashpoints) return false;
    if (k === 'partition-ring' && caps.nodes < 5) return false;
    return true;
  });
}
