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

  /** Entries that just landed on `node`'s disk (its running log still holds what they follow). */
  appended(node: SimNode, entries: readonly Entry[]): void {
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
    const c = this.committed[e.index];
    if (!c) {
      // Applied through a path that did not record the commit (e.g. after a snapshot): record it.
      this.committed[e.index] = { term: e.term, data: e.data };
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
      this.onCommit?.(e.index, e.term, e.data);
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
