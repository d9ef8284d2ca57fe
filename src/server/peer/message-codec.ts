// Converts between the core's Message/Entry (src/raft/types.ts) and the wire types generated
// from proto/herald/raft/v1/raft.proto.

import * as pb from '../../gen/herald/raft/v1/raft.js';
import type { ConfState, Entry, EntryType, Message, MessageType, SnapshotMeta } from '../../raft/types.js';

const TYPE_TO_PB: Record<MessageType, pb.MessageType> = {
  vote: pb.MessageType.MESSAGE_TYPE_VOTE,
  voteResp: pb.MessageType.MESSAGE_TYPE_VOTE_RESPONSE,
  preVote: pb.MessageType.MESSAGE_TYPE_PRE_VOTE,
  preVoteResp: pb.MessageType.MESSAGE_TYPE_PRE_VOTE_RESPONSE,
  app: pb.MessageType.MESSAGE_TYPE_APPEND,
  appResp: pb.MessageType.MESSAGE_TYPE_APPEND_RESPONSE,
  heartbeat: pb.MessageType.MESSAGE_TYPE_HEARTBEAT,
  heartbeatResp: pb.MessageType.MESSAGE_TYPE_HEARTBEAT_RESPONSE,
  snap: pb.MessageType.MESSAGE_TYPE_SNAPSHOT,
  timeoutNow: pb.MessageType.MESSAGE_TYPE_TIMEOUT_NOW,
  readIndex: pb.MessageType.MESSAGE_TYPE_READ_INDEX,
  readIndexResp: pb.MessageType.MESSAGE_TYPE_READ_INDEX_RESPONSE,
};
const PB_TO_TYPE = new Map<pb.MessageType, MessageType>(
  Object.entries(TYPE_TO_PB).map(([k, v]) => [v, k as MessageType]),
);

const EMPTY = Buffer.alloc(0);

/** A Buffer view of the same bytes (the generated code types bytes as Buffer). */
export function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

function entryToPb(e: Entry): pb.Entry {
  return {
    term: e.term,
    index: e.index,
    type: e.type === 'config' ? pb.EntryType.ENTRY_TYPE_CONFIG : pb.EntryType.ENTRY_TYPE_NORMAL,
    data: asBuffer(e.data),
  };
}

function entryFromPb(e: pb.Entry): Entry {
  const type: EntryType = e.type === pb.EntryType.ENTRY_TYPE_CONFIG ? 'config' : 'normal';
  return { term: e.term, index: e.index, type, data: e.data };
}

export function snapshotMetaToPb(s: SnapshotMeta): pb.SnapshotMeta {
  const addr = Object.entries(s.conf.addresses ?? {});
  return {
    index: s.index,
    term: s.term,
    conf: {
      voters: [...s.conf.voters],
      learners: [...(s.conf.learners ?? [])],
      incarnations: { ...s.conf.incarnations },
      peerAddresses: Object.fromEntries(addr.map(([id, a]) => [id, a.peer])),
      clientAddresses: Object.fromEntries(addr.map(([id, a]) => [id, a.client])),
    },
  };
}

export function snapshotMetaFromPb(s: pb.SnapshotMeta): SnapshotMeta {
  return { index: s.index, term: s.term, conf: s.conf ? confFromPb(s.conf) : { voters: [] } };
}

export function messageToPb(m: Message, wallUnixMs: number): pb.RaftMessage {
  return {
    type: TYPE_TO_PB[m.type],
    from: m.from,
    to: m.to,
    term: m.term,
    logTerm: m.logTerm,
    index: m.index,
    entries: m.entries.map(entryToPb),
    commit: m.commit,
    reject: m.reject,
    rejectHint: m.rejectHint,
    rejectHintTerm: m.rejectHintTerm,
    snapshot: m.snapshot ? snapshotMetaToPb(m.snapshot) : undefined,
    context: m.context ? asBuffer(m.context) : EMPTY,
    senderWallUnixMs: wallUnixMs,
  };
}

/** Undefined for a message type this build does not know (dropped, like a lost packet). */
export function messageFromPb(p: pb.RaftMessage): Message | undefined {
  const type = PB_TO_TYPE.get(p.type);
  if (!type) return undefined;
  const m: Message = {
    type,
    from: p.from,
    to: p.to,
    term: p.term,
    logTerm: p.logTerm,
    index: p.index,
    entries: p.entries.map(entryFromPb),
    commit: p.commit,
    reject: p.reject,
    rejectHint: p.rejectHint,
    rejectHintTerm: p.rejectHintTerm,
  };
  if (p.snapshot) m.snapshot = snapshotMetaFromPb(p.snapshot);
  if (p.context.length > 0) m.context = p.context;
  return m;
}

/** Approximate encoded size, for batching under the message size limit. */
export function approxMessageBytes(m: Message): number {
  let n = 64 + (m.context?.length ?? 0);
  for (const e of m.entries) n += 24 + e.data.length;
  return n;
}

/** Empty learner, incarnation and address lists stay absent, as in a configuration that never had any. */
function confFromPb(c: pb.ConfState): ConfState {
  const ids = Object.keys(c.peerAddresses);
  return {
    voters: [...c.voters],
    ...(c.learners.length > 0 ? { learners: [...c.learners] } : {}),
    ...(Object.keys(c.incarnations).length > 0 ? { incarnations: { ...c.incarnations } } : {}),
    ...(ids.length > 0 ? { addresses: Object.fromEntries(ids.map((id) => [id, { peer: c.peerAddresses[id]!, client: c.clientAddresses[id] ?? '' }])) } : {}),
  };
}
