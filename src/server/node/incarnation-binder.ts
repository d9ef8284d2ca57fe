// The leader binds the incarnations of members its configuration lists without one — the members
// named by `--peers` at bootstrap, whose incarnations nobody knew when the configuration was
// written — once it has heard each from its peer stream (itself: its own). Bound, a member's
// wiped-disk restart is a new incarnation the peers refuse votes from (incarnation-check.ts),
// instead of a voter that forgot whom it voted for. One change at a time, like every other.
import type { Logger } from 'pino';
import { isHeraldError } from '../../herald-error.js';
import { incarnationOf, membersOf, type ConfChange } from '../../raft/core/membership.js';
import type { ConfState, NodeId } from '../../raft/types.js';

/** The incarnation each peer's stream last named (what the peer port heard). */
export class HeardIncarnations {
  private readonly heard = new Map<NodeId, string>();

  hear(from: NodeId, incarnation: string): void {
    if (incarnation !== '' && this.heard.get(from) !== incarnation) this.heard.set(from, incarnation);
  }

  get(id: NodeId): string | undefined {
    return this.heard.get(id);
  }
}

/** The next binding to propose, or undefined: every member is bound or not heard from yet. */
export function nextBinding(conf: ConfState, selfId: NodeId, selfIncarnation: string, heard: (id: NodeId) => string | undefined): ConfChange | undefined {
  for (const id of membersOf(conf)) {
    if (incarnationOf(conf, id) !== '') continue;
    const incarnation = id === selfId ? selfIncarnation : heard(id);
    if (incarnation) return { kind: 'bindIncarnation', id, incarnation };
  }
  return undefined;
}

export interface BinderDeps {
  selfId: NodeId;
  /** '' in a data dir from before incarnations: such a node binds nobody. */
  selfIncarnation: string;
  heard: HeardIncarnations;
  isLeader(): boolean;
  confState(): ConfState;
  confChangePending(): boolean;
  proposeConfChange(cc: ConfChange): Promise<void>;
  logger: Logger;
}

/** One check: proposes the next binding when this node leads and no change is pending. */
export async function bindNextIncarnation(d: BinderDeps): Promise<void> {
  if (d.selfIncarnation === '' || !d.isLeader() || d.confChangePending()) return;
  const cc = nextBinding(d.confState(), d.selfId, d.selfIncarnation, (id) => d.heard.get(id));
  if (!cc) return;
  try {
    await d.proposeConfChange(cc);
    d.logger.info({ member: cc.id, incarnation: cc.incarnation }, 'member incarnation bound');
  } catch (e) {
    // Not yet (no entry of this term committed, a change pending, leadership lost): next check.
    if (!isHeraldError(e)) throw e;
    d.logger.debug({ err: e, member: cc.id }, 'incarnation binding not done yet; retrying');
  }
}
