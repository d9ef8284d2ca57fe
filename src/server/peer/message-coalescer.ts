// Merges runs of messages that Raft treats as cumulative before they go on the wire.
//
// The core emits one append per proposal (each propose() broadcasts), so a burst of 64 client
// proposals becomes 64 appends per follower and 64 responses back, each stepped separately. A
// run of appends to one peer in one term whose entries are contiguous is exactly one append of
// the concatenated entries (same prev index/term as the first, the last commit index); the
// follower does the same work and answers once. A run of accepting append responses is
// cumulative too: the leader only uses the highest match index (etcd's progress.MaybeUpdate),
// so the last of the run carries everything the earlier ones did. Rejections, votes and
// everything else pass through untouched, in order.

import type { Message } from '../../raft/types.js';

function canExtendApp(prev: Message, next: Message): boolean {
  if (next.type !== 'app' || prev.type !== 'app' || next.to !== prev.to || next.term !== prev.term) return false;
  const last = prev.entries.length > 0 ? prev.entries[prev.entries.length - 1]!.index : prev.index;
  const lastTerm = prev.entries.length > 0 ? prev.entries[prev.entries.length - 1]!.term : prev.logTerm;
  if (next.index !== last || next.logTerm !== lastTerm || next.commit < prev.commit) return false;
  let bytes = 0;
  for (const e of prev.entries) bytes += e.data.length;
  return bytes < MAX_MERGED_BYTES;
}

/** Merged appends stay well under the stream's message size limit. */
const MAX_MERGED_BYTES = 4 * 1024 * 1024;

function canReplaceResp(prev: Message, next: Message): boolean {
  return (
    prev.type === 'appResp' &&
    next.type === 'appResp' &&
    !prev.reject &&
    !next.reject &&
    prev.to === next.to &&
    prev.term === next.term &&
    next.index >= prev.index
  );
}

/** Returns a new, shorter list with the same effect; the input is not modified. */
export function coalesceMessages(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  for (const m of messages) {
    const prev = out[out.length - 1];
    if (prev && canExtendApp(prev, m)) {
      out[out.length - 1] = { ...prev, entries: prev.entries.concat(m.entries), commit: m.commit };
    } else if (prev && canReplaceResp(prev, m)) {
      out[out.length - 1] = m;
    } else {
      out.push(m);
    }
  }
  return out;
}
