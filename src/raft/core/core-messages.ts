// Small helpers of the Raft core's messages (kept out of raft-node.ts to keep it readable).

import type { HardState, Message, MessageType, NodeId } from '../types.js';

/** The vote-message context marking a campaign started by leadership transfer (TimeoutNow). */
export const CAMPAIGN_TRANSFER = new TextEncoder().encode('CampaignTransfer');

export const NONE = '';

/** What a leader sends: accepted from a non-member (a leader of a configuration not seen yet). */
export const LEADER_MESSAGES: ReadonlySet<MessageType> = new Set(['app', 'heartbeat', 'snap', 'timeoutNow']);

export function isTransferContext(ctx: Uint8Array | undefined): boolean {
  if (!ctx || ctx.length !== CAMPAIGN_TRANSFER.length) return false;
  for (let i = 0; i < ctx.length; i++) if (ctx[i] !== CAMPAIGN_TRANSFER[i]) return false;
  return true;
}

export function message(type: MessageType, from: NodeId, to: NodeId, term: number): Message {
  return {
    type,
    from,
    to,
    term,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
    rejectHintTerm: 0,
  };
}


export function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
