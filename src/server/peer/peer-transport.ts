// Outbound Raft messaging: one long-lived, ordered RaftService.Stream per peer. Messages queued
// for a peer during one event-loop turn go out as one StreamRequest (a batch), so appends are
// pipelined and many proposals share a frame. A broken stream is reported to the core as
// unreachable (it falls back to probing) and reopened with exponential backoff; messages queued
// while it is down are dropped, as Raft expects of a lossy network.
//
// Inbound streams are served by src/server/peer/peer-server.ts, which calls receive().

import { credentials, makeGenericClientConstructor, type ChannelCredentials, type ClientWritableStream } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { RaftServiceClient, type StreamRequest } from '../../gen/herald/raft/v1/raft.js';
import { PEER_RAFT_SERVICE } from './stream-request-codec.js';
import type { ConfState, Message, NodeId } from '../../raft/types.js';
import { addressesOf, incarnationOf, membersOf } from '../../raft/core/membership.js';
import { approxMessageBytes, messageFromPb, messageToPb } from './message-codec.js';
import { coalesceMessages } from './message-coalescer.js';
import { systemMonotonicClock, wallClockUnixMs, type MonotonicClock } from '../../raft/monotonic-clock.js';
import type { PeerInfo, RaftTransport, SnapshotSend, SnapshotSent } from '../../raft/ports.js';
import { sendSnapshot } from './snapshot-sender.js';

/** Kept here too: callers that build peer lists import it with the transport. */
export type { PeerInfo };

export interface PeerClock {
  /** The peer's wall clock as stamped on the last message received from it. */
  wallUnixMs: number;
  /** Local monotonic time at which that message arrived. */
  receivedAtMs: number;
  /** Round trip of the last heartbeat -> heartbeat response, in ms (-1 until measured). */
  rttMs: number;
}

export interface PeerTransportOptions {
  selfId: NodeId;
  clusterId: string;
  peers: readonly PeerInfo[];
  logger: Logger;
  /** Largest StreamRequest we write; also the gRPC message size limit. */
  maxBatchBytes?: number;
  /** A peer whose queue grows past this (it is slow or gone) loses the queue. */
  maxQueuedBytes?: number;
  clock?: MonotonicClock;
  /** Called for a peer whose stream broke: the core stops pipelining to it. */
  onUnreachable: (peer: NodeId) => void;
  /** A heartbeat response arrived: the peer's stamped wall clock and the measured round trip. */
  onPeerClock?: (peer: NodeId, wallUnixMs: number, rttMs: number) => void;
  /** The cluster's election timeout: transport keepalive on peer links is bounded by it. */
  electionTimeoutMs?: number;
  /** How to dial each peer (mutual TLS naming that peer); plaintext when absent. */
  channelCredentials?: (peer: NodeId) => ChannelCredentials;
  /** This node's incarnation, stamped on every batch ('' in data dirs from before incarnations). */
  incarnation?: string;
  /**
   * The highest cluster feature level this node's build supports, stamped on every batch
   * (StreamRequest.feature_level; 0 when absent: a node without feature levels).
   */
  featureLevel?: () => number;
  /**
   * The configuration in force here: members it adds are dialled at the addresses it records
   * (runtime changes), and each batch names the receiver's incarnation as it lists it.
   */
  conf?: () => ConfState | undefined;
}

/**
 * gRPC channel options shared by every peer client. Keepalive is in line with the election
 * timeout: a link the network went silent on is torn down (and the peer reported unreachable)
 * within a few election timeouts, and a fresh connection is dialled, instead of waiting out
 * 10 s + 5 s on a dead TCP connection once the network is back. Raft heartbeats keep data flowing
 * on these links, so the pings are always "with data" (no server ping policy applies).
 */
export function peerChannelOptions(maxBytes: number, electionTimeoutMs = 1_000): Record<string, number> {
  const keepaliveMs = Math.max(2_000, 3 * electionTimeoutMs);
  return {
    'grpc.max_send_message_length': maxBytes,
    'grpc.max_receive_message_length': maxBytes,
    // grpc-js defaults to 1 s .. 120 s: a restarted peer would stay unreachable for minutes.
    'grpc.initial_reconnect_backoff_ms': 50,
    'grpc.min_reconnect_backoff_ms': 50,
    'grpc.max_reconnect_backoff_ms': 1000,
    'grpc.keepalive_time_ms': keepaliveMs,
    'grpc.keepalive_timeout_ms': keepaliveMs,
    'grpc.keepalive_permit_without_calls': 1,
  };
}

/** The generated client's shape, with the peer stream's own request codec (stream-request-codec.ts). */
export const PeerRaftClient = makeGenericClientConstructor(PEER_RAFT_SERVICE, 'herald.raft.v1.RaftService') as unknown as typeof RaftServiceClient;

export const DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024;
/**
 * Effects are a shortcut, never worth delaying Raft traffic for: a peer whose stream already
 * buffers this much, or whose effects queue holds this much, gets no more (it evaluates).
 */
const MAX_EFFECTS_BACKLOG_BYTES = 8 * 1024 * 1024;

class PeerLink {
  call: ClientWritableStream<StreamRequest> | undefined;
  queue: Message[] = [];
  queuedBytes = 0;
  /** Applied effects for the peer (sendEffects), sent with the next batch. */
  effects: Buffer[] = [];
  effectsBytes = 0;
  flushScheduled = false;
  backoffMs = 0;
  retryAt = 0;
  retryTimer: NodeJS.Timeout | undefined;
  loggedDown = false;
  /** Monotonic time of the oldest heartbeat awaiting its response (RTT sample). */
  heartbeatSentAt = -1;
  clock: PeerClock = { wallUnixMs: 0, receivedAtMs: -1, rttMs: -1 };
  /** Test fault hook: drop everything to and from this peer. */
  blocked = false;

  constructor(
    readonly info: PeerInfo,
    readonly client: RaftServiceClient,
  ) {}
}

export class PeerTransport implements RaftTransport {
  private readonly links = new Map<NodeId, PeerLink>();
  private readonly clock: MonotonicClock;
  private readonly maxBatchBytes: number;
  private readonly maxQueuedBytes: number;
  private stopped = false;
  /** The configuration the links were last matched to (compared by reference: changes are rare). */
  private syncedConf: ConfState | undefined;
  /** Messages handed to the streams (observability). */
  sentMessages = 0;
  sentBatches = 0;
  /** Effects records written to streams, and dropped for a slow or unreachable peer. */
  sentEffects = 0;
  droppedEffects = 0;

  constructor(private readonly opts: PeerTransportOptions) {
    this.clock = opts.clock ?? systemMonotonicClock;
    this.maxBatchBytes = opts.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
    this.maxQueuedBytes = opts.maxQueuedBytes ?? 64 * 1024 * 1024;
    for (const p of opts.peers) if (p.id !== opts.selfId) this.link(p);
  }

  private link(p: PeerInfo): void {
    const creds = this.opts.channelCredentials?.(p.id) ?? credentials.createInsecure();
    const client = new PeerRaftClient(p.peerAddress, creds, peerChannelOptions(this.maxBatchBytes + 1024 * 1024, this.opts.electionTimeoutMs));
    this.links.set(p.id, new PeerLink(p, client));
  }

  /**
   * Dials members the configuration in force added since (at the addresses it records), and
   * redials one it records at a new address (a replaced machine). Links are never dropped here:
   * the core sends nothing to a non-member.
   */
  private syncPeers(): void {
    const conf = this.opts.conf?.();
    if (!conf || conf === this.syncedConf || this.stopped) return;
    this.syncedConf = conf;
    const book = addressesOf(conf);
    for (const id of membersOf(conf)) {
      const a = book[id];
      if (id === this.opts.selfId || !a) continue;
      const l = this.links.get(id);
      if (l && l.info.peerAddress === a.peer) continue;
      if (l) {
        this.dropQueue(l);
        this.closeCall(l);
        if (l.retryTimer) clearTimeout(l.retryTimer);
        l.client.close();
        this.opts.logger.info({ peer: id, from: l.info.peerAddress, to: a.peer }, 'member moved; redialling');
      }
      this.link({ id, peerAddress: a.peer, clientAddress: a.client });
    }
  }

  peerIds(): NodeId[] {
    this.syncPeers();
    return [...this.links.keys()];
  }

  /** The generated client for a peer (Forward, ReadIndex, InstallSnapshot). */
  client(peer: NodeId): RaftServiceClient | undefined {
    this.syncPeers();
    return this.links.get(peer)?.client;
  }

  /** Ships a snapshot over RaftService.InstallSnapshot (snapshot-sender.ts); undefined for an unknown peer. */
  sendSnapshot(s: SnapshotSend): Promise<SnapshotSent> | undefined {
    const client = this.client(s.to);
    if (!client) return undefined;
    return sendSnapshot({ ...s, client, clusterId: this.opts.clusterId, from: this.opts.selfId });
  }

  peerClock(peer: NodeId): PeerClock | undefined {
    const l = this.links.get(peer);
    return l ? { ...l.clock } : undefined;
  }

  /** Queues messages; each peer's queue is flushed as one batch at the end of this turn. */
  send(messages: readonly Message[]): void {
    if (this.stopped) return;
    this.syncPeers();
    for (const m of messages) {
      const l = this.links.get(m.to);
      if (!l || l.blocked) continue;
      // Time from the LATEST heartbeat: after an outage the first response answers a recent
      // heartbeat, and timing it from the first unanswered one made the round trip as long as
      // the outage, pushing cluster time ahead (runs started early). Timing from the latest can
      // only under-estimate the round trip, which errs towards firing late, never early.
      if (m.type === 'heartbeat') l.heartbeatSentAt = this.clock.nowMs();
      l.queue.push(m);
      l.queuedBytes += approxMessageBytes(m);
      if (l.queuedBytes > this.maxQueuedBytes) {
        this.opts.logger.warn({ peer: l.info.id, bytes: l.queuedBytes }, 'peer queue overflow; dropping');
        this.dropQueue(l);
        this.opts.onUnreachable(l.info.id);
        continue;
      }
      if (!l.flushScheduled) {
        l.flushScheduled = true;
        setImmediate(() => this.flush(l));
      }
    }
  }

  /**
   * Queues one apply's effects for every peer (the leader's followers). Dropped, not queued, for
   * a peer that is blocked, down or backed up, and when too big for one batch.
   */
  sendEffects(effects: Uint8Array): void {
    if (this.stopped) return;
    const view = Buffer.from(effects.buffer, effects.byteOffset, effects.byteLength);
    for (const l of this.links.values()) {
      const backlog = l.effectsBytes + (l.call?.writableLength ?? 0);
      if (l.blocked || !l.call || effects.length > this.maxBatchBytes / 2 || backlog + effects.length > MAX_EFFECTS_BACKLOG_BYTES) {
        this.droppedEffects++;
        continue;
      }
      l.effects.push(view);
      l.effectsBytes += effects.length;
      if (!l.flushScheduled) {
        l.flushScheduled = true;
        setImmediate(() => this.flush(l));
      }
    }
  }

  /** The effects an inbound batch carries (none from a blocked or unknown peer). */
  receiveEffects(req: StreamRequest): Uint8Array[] {
    if (req.effects.length === 0) return [];
    const l = this.links.get(req.effectsFrom);
    return l && !l.blocked ? req.effects : [];
  }

  /** Inbound batch from a peer's stream; returns the decoded messages for the driver. */
  receive(req: StreamRequest): Message[] {
    const out: Message[] = [];
    const now = this.clock.nowMs();
    for (const p of req.messages) {
      const m = messageFromPb(p);
      if (!m) continue;
      const l = this.links.get(m.from);
      if (l) {
        if (l.blocked) continue;
        l.clock.receivedAtMs = now;
        if (p.senderWallUnixMs) l.clock.wallUnixMs = p.senderWallUnixMs;
        if (m.type === 'heartbeatResp' && l.heartbeatSentAt >= 0) {
          l.clock.rttMs = now - l.heartbeatSentAt;
          l.heartbeatSentAt = -1;
        }
        if (m.type === 'heartbeatResp' && p.senderWallUnixMs) this.opts.onPeerClock?.(m.from, p.senderWallUnixMs, Math.max(0, l.clock.rttMs));
      }
      out.push(m);
    }
    return out;
  }

  /** Test fault hook: drop all traffic to and from `peer` (or heal with false). */
  setBlocked(peer: NodeId, blocked: boolean): void {
    const l = this.links.get(peer);
    if (!l) return;
    l.blocked = blocked;
    if (blocked) {
      this.dropQueue(l);
      this.closeCall(l);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const l of this.links.values()) {
      if (l.retryTimer) clearTimeout(l.retryTimer);
      this.dropQueue(l);
      this.closeCall(l);
      l.client.close();
    }
  }

  private flush(l: PeerLink): void {
    l.flushScheduled = false;
    if (this.stopped || (l.queue.length === 0 && l.effects.length === 0)) return;
    const now = this.clock.nowMs();
    if (!l.call) {
      if (now < l.retryAt) {
        // Still backing off after a failure: the peer is unreachable; let Raft retry later.
        this.dropQueue(l);
        return;
      }
      this.openCall(l);
    }
    const call = l.call!;
    if (call.writableLength > this.maxQueuedBytes) {
      // The stream is open but not draining (a black-holed peer: no RST until keepalive gives
      // up). Stop piling bytes into it; Raft resends once the peer answers again.
      this.opts.logger.warn({ peer: l.info.id, buffered: call.writableLength }, 'peer stream not draining; dropping');
      this.dropQueue(l);
      this.opts.onUnreachable(l.info.id);
      return;
    }
    const queue = coalesceMessages(l.queue);
    const stamp = {
      senderIncarnation: this.opts.incarnation ?? '',
      targetIncarnation: incarnationOf(this.opts.conf?.() ?? { voters: [] }, l.info.id),
      featureLevel: this.opts.featureLevel?.() ?? 0,
    };
    const empty = (): StreamRequest => ({ clusterId: this.opts.clusterId, messages: [], effects: [], effectsFrom: '', ...stamp });
    let batch = empty();
    let bytes = 0;
    /** Starts a new batch first when `sz` more bytes would not fit this one. */
    const room = (sz: number): void => {
      if (bytes === 0 || bytes + sz <= this.maxBatchBytes) return;
      call.write(batch);
      this.sentBatches++;
      batch = empty();
      bytes = 0;
    };
    const wall = wallClockUnixMs();
    for (const m of queue) {
      const sz = approxMessageBytes(m);
      room(sz);
      batch.messages.push(messageToPb(m, wall));
      bytes += sz;
    }
    // Effects go after the messages: those carry the commit index the effects' entries need.
    for (const fx of l.effects) {
      room(fx.length);
      batch.effects.push(fx);
      batch.effectsFrom = this.opts.selfId;
      bytes += fx.length;
    }
    call.write(batch);
    this.sentBatches++;
    this.sentMessages += queue.length;
    this.sentEffects += l.effects.length;
    l.queue = [];
    l.queuedBytes = 0;
    l.effects = [];
    l.effectsBytes = 0;
  }

  private openCall(l: PeerLink): void {
    const call = l.client.stream((err) => {
      if (l.call !== call) return;
      l.call = undefined;
      if (this.stopped) return;
      l.backoffMs = Math.min(l.backoffMs === 0 ? 50 : l.backoffMs * 2, 1000);
      l.retryAt = this.clock.nowMs() + l.backoffMs * (0.5 + Math.random() / 2);
      if (!l.loggedDown) {
        l.loggedDown = true;
        this.opts.logger.warn({ peer: l.info.id, addr: l.info.peerAddress, err: err?.message }, 'peer stream broke');
      }
      this.opts.onUnreachable(l.info.id);
    });
    call.on('error', () => {
      /* reported through the callback */
    });
    l.call = call;
    // Reset the backoff once the stream has carried traffic for a while.
    l.retryTimer = setTimeout(() => {
      if (l.call === call) {
        l.backoffMs = 0;
        if (l.loggedDown) this.opts.logger.info({ peer: l.info.id }, 'peer stream up');
        l.loggedDown = false;
      }
    }, 2000);
    l.retryTimer.unref();
  }

  private closeCall(l: PeerLink): void {
    const c = l.call;
    l.call = undefined;
    if (c) {
      try {
        c.end();
      } catch {
        /* already closed */
      }
    }
  }

  private dropQueue(l: PeerLink): void {
    l.queue = [];
    l.queuedBytes = 0;
    this.droppedEffects += l.effects.length;
    l.effects = [];
    l.effectsBytes = 0;
  }
}
