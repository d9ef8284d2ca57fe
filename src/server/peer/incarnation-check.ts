// Member identity on the peer port (docs/membership.md): every batch names its sender's
// incarnation and the receiver's as the sender's configuration lists it. A node restarted on a
// wiped data dir under an old id is a new incarnation: peers do not deliver to it what they meant
// for the old one (it would answer votes it has no record of), and take from it only what a
// leader sends (a leader elected in a configuration we have not received must reach us), until
// the configuration lists it again.
import type { Logger } from 'pino';
import type { StreamRequest } from '../../gen/herald/raft/v1/raft.js';
import { HeraldError } from '../../herald-error.js';
import { LEADER_MESSAGES } from '../../raft/core/core-messages.js';
import { incarnationOf } from '../../raft/core/membership.js';
import type { ConfState, Message, NodeId } from '../../raft/types.js';

export interface IncarnationCheck {
  /** WRONG_INCARNATION when the batch was meant for another incarnation of this node. */
  wrongTarget(req: StreamRequest): HeraldError | undefined;
  /** The messages of the batch this node takes, given the sender's incarnation. */
  filter(req: StreamRequest, messages: Message[]): Message[];
  /** Messages dropped for coming from an incarnation the configuration does not list. */
  readonly dropped: number;
}

export function incarnationCheck(selfId: NodeId, self: string, conf: () => ConfState, logger: Logger): IncarnationCheck {
  const logged = new Set<string>();
  const logOnce = (key: string, fields: object, msg: string) => {
    if (logged.has(key)) return;
    logged.add(key);
    logger.warn(fields, msg);
  };
  let dropped = 0;
  return {
    wrongTarget(req) {
      if (self === '' || req.targetIncarnation === '' || req.targetIncarnation === self) return undefined;
      const from = req.messages[0]?.from ?? req.effectsFrom;
      logOnce(`target:${from}:${req.targetIncarnation}`, { from, theirs: req.targetIncarnation, ours: self }, 'peer addresses another incarnation of this node; refusing its stream');
      return new HeraldError(
        'WRONG_INCARNATION',
        `node ${selfId} is incarnation ${self}, not ${req.targetIncarnation}: it was restarted on an empty data dir and is a new member; add it with \`herald cluster add ${selfId}\` (after removing the old one)`,
      );
    },
    filter(req, messages) {
      const c = conf();
      let out: Message[] | undefined;
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i]!;
        const listed = incarnationOf(c, m.from);
        const ok = listed === '' || listed === req.senderIncarnation || LEADER_MESSAGES.has(m.type);
        if (ok) {
          out?.push(m);
          continue;
        }
        out ??= messages.slice(0, i);
        dropped++;
        logOnce(`from:${m.from}:${req.senderIncarnation}`, { from: m.from, theirs: req.senderIncarnation, listed }, 'messages from an incarnation the configuration does not list; dropping');
      }
      return out ?? messages;
    },
    get dropped() {
      return dropped;
    },
  };
}
