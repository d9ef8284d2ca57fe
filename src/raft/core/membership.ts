// Cluster configuration changes, one member at a time (Raft dissertation §4.1; docs/membership.md).
// A configuration is a value in the log (a 'config' entry carrying the whole new ConfState) and
// in snapshots. A member uses the latest configuration in its log, committed or not, from the
// moment the entry is appended; so any two configurations in force at once differ by at most one
// voter, and a majority of one always meets a majority of the other. That holds only because a
// leader (1) has committed an entry of its own term before it proposes a change and (2) never
// has two changes pending; ConfHistory answers "is one pending" and "which config is in force".

import { HeraldError } from '../../herald-error.js';
import type { ConfState, Entry, LogStorage, MemberAddresses, NodeId } from '../types.js';

// bindIncarnation records the incarnation of a member listed without one (the members a cluster
// was bootstrapped with): from then on peers take votes only from that incarnation, so a member
// restarted on a wiped disk cannot vote again in a term it already voted in. It changes no
// quorum, so one-at-a-time safety is untouched.
export type ConfChangeKind = 'addLearner' | 'promote' | 'remove' | 'bindIncarnation';

export interface ConfChange {
  kind: ConfChangeKind;
  id: NodeId;
  /** addLearner, bindIncarnation: the member's incarnation (a node restarted on a wiped disk is a new one). */
  incarnation?: string;
  /** Addresses to record with the change (the new member's; any member's not recorded yet). */
  addresses?: Readonly<Record<NodeId, MemberAddresses>>;
}

export function learnersOf(c: ConfState): readonly NodeId[] {
  return c.learners ?? [];
}

export function isVoter(c: ConfState, id: NodeId): boolean {
  return c.voters.includes(id);
}

export function isLearner(c: ConfState, id: NodeId): boolean {
  return learnersOf(c).includes(id);
}

export function isMember(c: ConfState, id: NodeId): boolean {
  return isVoter(c, id) || isLearner(c, id);
}

export function membersOf(c: ConfState): NodeId[] {
  return [...c.voters, ...learnersOf(c)];
}

/** Whether two configurations have the same voters and learners (incarnations and addresses aside). */
export function sameMembers(a: ConfState, b: ConfState): boolean {
  const key = (c: ConfState) => `${[...c.voters].sort().join(',')}|${[...learnersOf(c)].sort().join(',')}`;
  return key(a) === key(b);
}

/** The incarnation the configuration lists for `id` ('' when it lists none: any is accepted). */
export function incarnationOf(c: ConfState, id: NodeId): string {
  return c.incarnations?.[id] ?? '';
}

/** The address book a configuration records (empty when none). */
export function addressesOf(c: ConfState): Readonly<Record<NodeId, MemberAddresses>> {
  return c.addresses ?? {};
}

function withIncarnations(
  voters: NodeId[],
  learners: NodeId[],
  incarnations: Record<NodeId, string>,
  addresses: Record<NodeId, MemberAddresses> = {},
): ConfState {
  const c: { voters: NodeId[]; learners: NodeId[]; incarnations?: Record<NodeId, string>; addresses?: Record<NodeId, MemberAddresses> } = { voters, learners };
  if (Object.keys(incarnations).length > 0) c.incarnations = incarnations;
  if (Object.keys(addresses).length > 0) c.addresses = addresses;
  return c;
}

/** The configuration after `cc`; throws a typed error when the change makes no sense in `c`. */
export function applyConfChange(c: ConfState, cc: ConfChange): ConfState {
  const voters = [...c.voters];
  const learners = [...learnersOf(c)];
  const inc: Record<NodeId, string> = { ...c.incarnations };
  const addr: Record<NodeId, MemberAddresses> = { ...c.addresses };
  for (const [id, a] of Object.entries(cc.addresses ?? {})) if (id === cc.id || isMember(c, id)) addr[id] = { peer: a.peer, client: a.client };
  switch (cc.kind) {
    case 'addLearner':
      if (isMember(c, cc.id)) {
        throw new HeraldError('ALREADY_EXISTS', `${cc.id} is already a ${isVoter(c, cc.id) ? 'voter' : 'learner'}`);
      }
      if (cc.incarnation) inc[cc.id] = cc.incarnation;
      return withIncarnations(voters, [...learners, cc.id], inc, addr);
    case 'promote':
      if (isVoter(c, cc.id)) throw new HeraldError('ALREADY_EXISTS', `${cc.id} is already a voter`);
      if (!isLearner(c, cc.id)) throw new HeraldError('MEMBER_NOT_FOUND', `${cc.id} is not a learner; add it with \`herald cluster add\` first`);
      return withIncarnations([...voters, cc.id], learners.filter((l) => l !== cc.id), inc, addr);
    case 'bindIncarnation': {
      if (!isMember(c, cc.id)) throw new HeraldError('MEMBER_NOT_FOUND', `${cc.id} is not a member`);
      if (!cc.incarnation) throw new HeraldError('INVALID_ARGUMENT', `binding ${cc.id} needs an incarnation`);
      const listed = incarnationOf(c, cc.id);
      if (listed !== '') throw new HeraldError('ALREADY_EXISTS', `${cc.id} is already bound to incarnation ${listed}`);
      inc[cc.id] = cc.incarnation;
      return withIncarnations(voters, learners, inc, addr);
    }
    case 'remove':
      if (!isMember(c, cc.id)) throw new HeraldError('MEMBER_NOT_FOUND', `${cc.id} is not a member`);
      if (isVoter(c, cc.id) && voters.length === 1) {
        throw new HeraldError('INVALID_STATE', `removing ${cc.id} would leave no voter`);
      }
      delete inc[cc.id];
      delete addr[cc.id];
      return withIncarnations(voters.filter((v) => v !== cc.id), learners.filter((l) => l !== cc.id), inc, addr);
  }
}

/** The payload of a 'config' entry: the whole configuration it puts in force. */
export function encodeConfState(c: ConfState): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ voters: c.voters, learners: learnersOf(c), incarnations: c.incarnations, addresses: c.addresses }));
}

export function decodeConfState(data: Uint8Array): ConfState {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder().decode(data));
  } catch {
    throw new HeraldError('CORRUPT_STORAGE', 'config entry is not a configuration');
  }
  const o = v as { voters?: unknown; learners?: unknown; incarnations?: unknown; addresses?: unknown };
  const ids = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');
  const inc = o?.incarnations ?? {};
  const incOk = inc !== null && typeof inc === 'object' && !Array.isArray(inc) && Object.values(inc).every((s) => typeof s === 'string');
  const addr = o?.addresses ?? {};
  const isAddr = (a: unknown): boolean => a !== null && typeof a === 'object' && typeof (a as MemberAddresses).peer === 'string' && typeof (a as MemberAddresses).client === 'string';
  const addrOk = addr !== null && typeof addr === 'object' && !Array.isArray(addr) && Object.values(addr).every(isAddr);
  if (!ids(o?.voters) || !ids(o.learners) || !incOk || !addrOk) throw new HeraldError('CORRUPT_STORAGE', 'config entry is not a configuration');
  return withIncarnations(o.voters, o.learners, inc as Record<NodeId, string>, addr as Record<NodeId, MemberAddresses>);
}

interface ConfAt {
  index: number;
  term: number;
  conf: ConfState;
}

/** The configurations in the log past the snapshot, in index order, and the snapshot's as a base. */
export class ConfHistory {
  private entries: ConfAt[] = [];

  constructor(private base: ConfState) {}

  /** A snapshot replaced the log. */
  reset(base: ConfState): void {
    this.base = base;
    this.entries = [];
  }

  /**
   * Entries were written to the log (possibly replacing a conflicting suffix). A config entry we
   * hold survives only if the log still has its term at its index (Log Matching: then it is the
   * same entry); `termAt` is the log after the write. One compacted away (below `firstIndex`)
   * still stands: compaction only drops a committed prefix.
   */
  noteAppended(ents: readonly Entry[], termAt: (index: number) => number | undefined, firstIndex: number): void {
    let kept = this.entries.filter((e) => e.index < firstIndex || termAt(e.index) === e.term);
    for (const e of ents) {
      if (e.type !== 'config' || termAt(e.index) !== e.term) continue;
      kept = kept.filter((k) => k.index !== e.index);
      kept.push({ index: e.index, term: e.term, conf: decodeConfState(e.data) });
    }
    this.entries = kept.sort((a, b) => a.index - b.index);
  }

  /** The latest configuration in the log (the one in force). */
  current(): ConfState {
    return this.entries[this.entries.length - 1]?.conf ?? this.base;
  }

  /** The configuration as of log index `index` (for a snapshot taken there). */
  at(index: number): ConfState {
    let c = this.base;
    for (const e of this.entries) {
      if (e.index > index) break;
      c = e.conf;
    }
    return c;
  }

  /** Index of the latest config entry in the log, 0 when the snapshot's is the latest. */
  lastIndex(): number {
    return this.entries[this.entries.length - 1]?.index ?? 0;
  }
}

/** The latest configuration in a stored log (its snapshot's, or its last config entry's). */
export function confInLog(storage: LogStorage): ConfState {
  let conf = storage.initialState().conf;
  const first = storage.firstIndex();
  const last = storage.lastIndex();
  if (last < first) return conf;
  for (const e of storage.entries(first, last + 1)) if (e.type === 'config') conf = decodeConfState(e.data);
  return conf;
}
