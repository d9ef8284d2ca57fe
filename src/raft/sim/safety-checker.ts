// Raft's safety properties (the paper's Figure 3), checked incrementally as the simulation runs
// so that every step is checked without re-scanning whole logs:
// - election safety: at most one leader per term;
// - log matching: every (index, term) ever written anywhere has one payload and one previous
//   term, which by induction makes logs that share an entry identical up to it;
// - leader completeness: a new leader holds every entry committed so far;
// - state machine safety: no two nodes apply different entries at one index;
// - committed entries are never lost (a majority keeps them durably) or changed;
// - a node's term and vote never go backwards across a restart (relative to what it told others).

import type { Entry, Message, NodeId } from '../types.js';
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
  /** index -> the committed entry (sparse array). */
  readonly committed: Committed[] = [];
  maxCommitted = 0;
  /** What each node has told others: the highest term, and its vote in that term. */
  private readonly exposed = new Map<NodeId, { term: number; vote: NodeId }>();
  now = 0;
  /** Called when an index is first seen committed, with its term. */
  onCommit: ((index: number, term: number) => void) | undefined;

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

  /** Entries just persisted by `node` (after the append). */
  appended(node: SimNode, entries: readonly Entry[]): void {
    for (const e of entries) {
      const prevTerm = e.index > 1 ? node.termAt(e.index - 1) : 0;
      const key = `${e.index}:${e.term}`;
      const seen = this.written.get(key);
      if (!seen) {
        this.written.set(key, { data: e.data, prevTerm });
        continue;
      }
      if (!bytesEqual(seen.data, e.data)) {
        this.fail('log-matching', `${node.id}: entry ${key} has two payloads`);
      } else if (seen.prevTerm !== undefined && prevTerm !== undefined && seen.prevTerm !== prevTerm) {
        this.fail('log-matching', `${node.id}: entry ${key} follows term ${prevTerm}, elsewhere ${seen.prevTerm}`);
      }
    }
  }

  /** `node` advanced its commit index from `from` (exclusive) to `to`. */
  committedRange(node: SimNode, from: number, to: number): void {
    for (let i = Math.max(from + 1, node.storage.firstIndex()); i <= to; i++) {
      const e = node.entryAt(i);
      if (!e) {
        this.fail('commit', `${node.id} committed ${i} but does not hold it`);
        return;
      }
      const c = this.committed[i];
      if (!c) {
        this.committed[i] = { term: e.term, data: e.data };
        if (i > this.maxCommitted) this.maxCommitted = i;
        this.onCommit?.(i, e.term);
      } else if (c.term !== e.term || !bytesEqual(c.data, e.data)) {
        this.fail('committed-changed', `${node.id} committed ${i}@${e.term}, earlier ${i}@${c.term}`);
        return;
      }
    }
  }

  applied(node: SimNode, e: Entry): void {
    const c = this.committed[e.index];
    if (!c) {
      // Applied through a path that did not record the commit (e.g. after a snapshot): record it.
      this.committed[e.index] = { term: e.term, data: e.data };
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
      this.onCommit?.(e.index, e.term);
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

  /** After a crash: every committed entry must still be durable on a majority. */
  durability(nodes: readonly SimNode[]): void {
    const lo = Math.max(1, this.maxCommitted - 64);
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
