// Raft's safety properties (the paper's Figure 3), checked incrementally as the simulation runs
// so that every step is checked without re-scanning whole logs:
// - election safety: at most one leader per term;
// - log matching: every (index, term) ever written anywhere has one payload and one previous
//   term, which by induction makes logs that share an entry identical up to it;
// - leader completeness: a new leader holds every entry committed so far;
// - state machine safety: no two nodes apply different entries at one index, and replicas hold
//   the same state at the same applied index (the driver's applied index is the machine's);
// - a restarted node's applied index is covered by the log it restarts with;
// - committed entries are never lost (a majority keeps them durably) or changed;
// - a node's term and vote never go backwards across a restart (relative to what it told others).
// Across configuration changes (docs/membership.md):
// - a leader won with grants from a majority of the voters of its configuration (a learner's or
//   a removed member's grant never counts);
// - the leader's configuration can never have a majority disjoint from one of the latest
//   committed configuration (one change pending at most);
// - a member uses the latest configuration in its log (checked when it acknowledges an append);
// - a node whose disk was wiped never votes under the incarnation it had before.

import { decodeConfState, sameMembers } from '../core/membership.js';
import type { ConfState, Entry, Message, NodeId } from '../types.js';
import { bytesEqual } from './kv-command.js';
import type { SimNode } from './sim-node.js';

export interface Violation {
  kind: string;
  detail: string;
  at: number;
}

interface Committed {
  term: number;
  data: Uint8Array;
}

export class SafetyChecker {
  readonly violations: Violation[] = [];
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** (index:term) -> payload and previous term, for every entry ever persisted. */
  private readonly written = new Map<string, { data: Uint8Array; prevTerm: number | undefined }>();
  /** Applied index -> the state digest replicas hold there. */
  private readonly digests = new Map<number, number>();
  /** index -> the committed entry (sparse array). */
  readonly committed: Committed[] = [];
  maxCommitted = 0;
  /** What each node has told others: the highest term, and its vote in that term. */
  private readonly exposed = new Map<NodeId, { term: number; vote: NodeId }>();
  now = 0;
  /** Called when an index is first seen committed, with its term. */
  onCommit: ((index: number, term: number, data: Uint8Array) => void) | undefined;
  /** term -> candidate -> the nodes that granted it a vote. */
  private readonly grants = new Map<number, Map<NodeId, Set<NodeId>>>();
  /** The latest committed configuration entry seen applied. */
  private committedConf: { index: number; conf: ConfState } | undefined;
  /** Per node: the latest config entry that landed on its disk (undefined after a truncation below it). */
  private readonly landedConf = new Map<NodeId, { index: number; term: number; conf: ConfState }>();
  /** Nodes wiped but still under their old incarnation. */
  private readonly wipedAsBefore = new Map<NodeId, string>();
  /** Entries up to here (committed then, or later) may have lost their majority to a wiped disk. */
  private durableFrom = 1;
  /** The highest index written anywhere: what may be committed before the checker sees it applied. */
  private maxWritten = 0;

  constructor(readonly quorum: number) {}

  private fail(kind: string, detail: string): void {
    // One report per kind is enough to fail a seed; keep the list short for traces.
    if (this.violations.length < 20) this.violations.push({ kind, detail, at: this.now });
  }

  becameLeader(node: SimNode, term: number): void {
    const prev = this.leaderOfTerm.get(term);
    if (prev !== undefined && prev !== node.id) {
      this.fail('election-safety', `term ${term} has two leaders: ${prev} and ${node.id}`);
      return;
    }
    const conf = node.driver.confState();
    const granted = this.grants.get(term)?.get(node.id);
    const votes = conf.voters.filter((v) => v === node.id || granted?.has(v)).length;
    if (votes < Math.floor(conf.voters.length / 2) + 1) {
      this.fail('quorum-without-voters', `${node.id} leads term ${term} with grants from ${votes} of voters [${conf.voters.join(',')}] (granted by ${[...(granted ?? [])].join(',')})`);
      return;
    }
    for (const t of this.grants.keys()) if (t < term - 16) this.grants.delete(t);
    this.leaderOfTerm.set(term, node.id);
    // Leader completeness: every committed entry above our compaction point is in our log.
    const from = node.storage.firstIndex();
    if (node.storage.lastIndex() < this.maxCommitted) {
      this.fail('leader-completeness', `leader ${node.id} of term ${term} ends at ${node.storage.lastIndex()}, committed ${this.maxCommitted}`);
      return;
    }
    for (let i = Math.max(from, 1); i <= this.maxCommitted; i++) {
      const c = this.committed[i];
      if (c && node.termAt(i) !== c.term) {
        this.fail('leader-completeness', `leader ${node.id} of term ${term} lacks committed ${i}@${c.term}`);
        return;
      }
    }
  }

  /** Entries that just landed on `node`'s disk (its running log still holds what they follow). */
  appended(node: SimNode, entries: readonly Entry[]): void {
    const lc = this.landedConf.get(node.id);
    if (lc && entries.length > 0 && entries[0]!.index <= lc.index) this.landedConf.delete(node.id);
    for (const e of entries) if (e.index > this.maxWritten) this.maxWritten = e.index;
    for (const e of entries) if (e.type === 'config') this.landedConf.set(node.id, { index: e.index, term: e.term, conf: decodeConfState(e.data) });
    let prevTerm = entries.length > 0 && entries[0]!.index > 1 ? node.termAt(entries[0]!.index - 1) : 0;
    for (const e of entries) {
      const key = `${e.index}:${e.term}`;
      const seen = this.written.get(key);
      if (!seen) {
        this.written.set(key, { data: e.data, prevTerm });
      } else if (!bytesEqual(seen.data, e.data)) {
        this.fail('log-matching', `${node.id}: entry ${key} has two payloads`);
      } else if (seen.prevTerm !== undefined && prevTerm !== undefined && seen.prevTerm !== prevTerm) {
        this.fail('log-matching', `${node.id}: entry ${key} follows term ${prevTerm}, elsewhere ${seen.prevTerm}`);
      }
      prevTerm = e.term;
    }
  }

  /**
   * The driver says `node` applied up to `index`: its state machine must be there too, holding
   * the state every replica holds at that index (digests agree).
   */
  appliedState(node: SimNode, index: number, smApplied: number, digest: number): void {
    if (smApplied !== index) {
      this.fail('applied-index-mismatch', `${node.id}: driver applied ${index}, state machine at ${smApplied}`);
      return;
    }
    const seen = this.digests.get(index);
    if (seen === undefined) this.digests.set(index, digest);
    else if (seen !== digest) this.fail('state-divergence', `${node.id}: state at applied index ${index} differs from another replica's`);
  }

  /** `node`'s state machine evaluates `e`: its log on disk must hold that very entry by now. */
  evaluatedFromDisk(node: SimNode, e: Entry): void {
    const onDisk = node.landedTerm(e.index);
    if (onDisk !== e.term) {
      this.fail('applied-not-durable', `${node.id} applies ${e.index}@${e.term} while its disk holds ${onDisk === undefined ? 'nothing' : `${e.index}@${onDisk}`} there`);
    }
  }

  /**
   * A restart: the state machine's applied index must be covered by the log it restarts with,
   * and each entry of the log up to it must be the committed one (else it applied entries its
   * disk does not hold: applied before durable).
   */
  restartedApplied(node: SimNode, applied: number): void {
    const st = node.storage;
    if (applied > st.lastIndex()) {
      this.fail('applied-not-durable', `${node.id} restarted with applied ${applied} beyond its log's last entry ${st.lastIndex()}`);
      return;
    }
    for (let i = Math.max(1, st.firstIndex()); i <= applied; i++) {
      const c = this.committed[i];
      const t = node.termAt(i);
      if (c && t !== c.term) {
        this.fail('applied-not-durable', `${node.id} restarted with applied ${applied} but holds ${i}@${t}, committed ${i}@${c.term}`);
        return;
      }
    }
  }

  applied(node: SimNode, e: Entry): void {
    if (e.type === 'config' && (!this.committedConf || e.index > this.committedConf.index)) {
      this.committedConf = { index: e.index, conf: decodeConfState(e.data) };
    }
    const c = this.committed[e.index];
    if (!c) {
      // Applied through a path that did not record the commit (e.g. after a snapshot): record it.
      this.committed[e.index] = { term: e.term, data: e.data };
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
      if (e.type === 'normal') this.onCommit?.(e.index, e.term, e.data);
      return;
    }
    if (c.term !== e.term || !bytesEqual(c.data, e.data)) {
      this.fail('state-machine-safety', `${node.id} applied ${e.index}@${e.term}, committed ${e.index}@${c.term}`);
    }
  }

  sent(node: SimNode, m: Message): void {
    // Pre-vote traffic carries a future term and readIndex requests term 0: neither is ours.
    if (m.type === 'preVote' || m.type === 'preVoteResp' || m.term === 0) return;
    let x = this.exposed.get(node.id);
    if (!x || m.term > x.term) {
      x = { term: m.term, vote: '' };
      this.exposed.set(node.id, x);
    }
    if (m.type === 'voteResp' && !m.reject && m.term === x.term) x.vote = m.to;
    if (m.type === 'voteResp' && !m.reject) {
      if (this.wipedAsBefore.get(node.id) === node.memberIncarnation) {
        this.fail('wiped-node-voted', `${node.id} lost its disk and grants ${m.to} a vote in term ${m.term} under its old incarnation ${node.memberIncarnation}`);
      }
      let byCandidate = this.grants.get(m.term);
      if (!byCandidate) this.grants.set(m.term, (byCandidate = new Map()));
      let set = byCandidate.get(m.to);
      if (!set) byCandidate.set(m.to, (set = new Set()));
      set.add(node.id);
    }
    if (m.type === 'appResp' && !m.reject) this.confIsLatest(node, m.index);
    if (m.type === 'vote' && m.term === x.term) x.vote = node.id;
  }

  restarted(node: SimNode): void {
    const x = this.exposed.get(node.id);
    if (!x) return;
    const hs = node.storage.initialState().hardState;
    if (hs.term < x.term) {
      this.fail('term-regressed', `${node.id} restarted at term ${hs.term} after sending term ${x.term}`);
    } else if (hs.term === x.term && x.vote !== '' && hs.vote !== x.vote) {
      this.fail('vote-regressed', `${node.id} restarted with vote '${hs.vote}' in term ${hs.term}, had voted ${x.vote}`);
    }
  }

  /**
   * `node` acknowledged its log up to `index`, all of it persisted: when that is its whole log
   * and the latest config entry that landed is still in it, that configuration must be in force.
   */
  private confIsLatest(node: SimNode, index: number): void {
    const lc = this.landedConf.get(node.id);
    if (!lc || !node.up || lc.index > index || node.storage.lastIndex() !== index) return;
    if (lc.index < node.storage.firstIndex() || node.termAt(lc.index) !== lc.term) return;
    // The core's log must be the one on disk: a leader's conflicting entries may have replaced
    // the suffix in memory while their write is still in flight (then the disk's config entry is
    // already gone from the configuration, rightly).
    const st = node.driver.status();
    if (st.lastIndex !== index || st.lastTerm !== node.termAt(index)) return;
    const inForce = node.driver.confState();
    if (!sameMembers(inForce, lc.conf)) {
      this.fail('conf-not-latest', `${node.id} holds config entry ${lc.index}@${lc.term} [${lc.conf.voters.join(',')}] but uses [${inForce.voters.join(',')}]`);
    }
  }

  /** The current leader's configuration against the latest committed one: their majorities must meet. */
  leaderConf(node: SimNode, term: number): void {
    const latestTerm = Math.max(0, ...this.leaderOfTerm.keys());
    // Commit may run ahead of apply (what the checker sees): compare only once the leader applied all.
    if (!this.committedConf || term < latestTerm || node.driver.appliedIndex() < node.driver.status().commit) return;
    const a = this.committedConf.conf;
    const b = node.driver.confState();
    if (disjointMajorities(a.voters, b.voters)) {
      this.fail('disjoint-quorums', `leader ${node.id} (term ${term}) uses voters [${b.voters.join(',')}], committed [${a.voters.join(',')}]: two majorities can be disjoint`);
    }
  }

  /** `node`'s disks were replaced; under a new incarnation it is a new member. */
  wiped(node: SimNode, sameIncarnation: boolean): void {
    this.landedConf.delete(node.id);
    this.durableFrom = Math.max(this.maxCommitted, this.maxWritten) + 1;
    if (sameIncarnation) this.wipedAsBefore.set(node.id, node.memberIncarnation);
    else {
      this.wipedAsBefore.delete(node.id);
      this.exposed.delete(node.id);
    }
  }

  /** After a crash: every committed entry must still be durable on a majority. */
  durability(nodes: readonly SimNode[]): void {
    const lo = Math.max(1, this.maxCommitted - 64, this.durableFrom);
    for (let i = lo; i <= this.maxCommitted; i++) {
      const c = this.committed[i];
      if (!c) continue;
      let holders = 0;
      for (const n of nodes) {
        if (n.durableSnapshotIndex() >= i || n.durableTerm(i) === c.term) holders++;
      }
      if (holders < this.quorum) {
        this.fail('committed-lost', `committed ${i}@${c.term} is durable on ${holders} nodes only`);
        return;
      }
    }
  }
}

/** Whether some majority of `a` and some majority of `b` share no voter. */
export function disjointMajorities(a: readonly NodeId[], b: readonly NodeId[]): boolean {
  const shared = a.filter((id) => b.includes(id)).length;
  const onlyA = a.length - shared;
  const onlyB = b.length - shared;
  const qa = Math.floor(a.length / 2) + 1;
  const qb = Math.floor(b.length / 2) + 1;
  return Math.max(0, qa - onlyA) + Math.max(0, qb - onlyB) <= shared;
}
