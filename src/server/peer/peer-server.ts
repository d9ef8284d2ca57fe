// herald.raft.v1.RaftService on the peer port: inbound Raft streams, InstallSnapshot (staged to
// disk, verified, then offered to the core), Forward (a follower's proposal) and ReadIndex.

import type { ServerReadableStream, ServiceError, sendUnaryData } from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import type { Logger } from 'pino';
import type {
  ForwardRequest,
  ForwardResponse,
  InstallSnapshotRequest,
  InstallSnapshotResponse,
  RaftServiceServer,
  ReadIndexRequest,
  ReadIndexResponse,
  StreamRequest,
  StreamResponse,
} from '../../gen/herald/raft/v1/raft.js';
import { HeraldError } from '../../herald-error.js';
import { snapshotMetaFromPb } from './message-codec.js';
import type { PeerTransport } from './peer-transport.js';
import type { RaftDriver } from '../../raft/driver/raft-driver.js';
import { SnapshotWriter } from '../../raft/storage/snapshot-files.js';
import { toServiceError } from '../grpc/service-error.js';
import { incarnationCheck } from './incarnation-check.js';

/** Metadata marking a Forward already forwarded once (a follower never forwards it again). */
export const FORWARDED_KEY = 'herald-forwarded';

export interface PeerServiceDeps {
  selfId: string;
  clusterId: string;
  driver: RaftDriver;
  transport: PeerTransport;
  snapshotDir: string;
  logger: Logger;
  /**
   * Proposes on behalf of a Forward call (forwards once more if this node is not the leader);
   * no timeout means the node's default.
   */
  propose: (command: Uint8Array, timeoutMs: number | undefined, mayForward: boolean) => Promise<{ index: number; result: Uint8Array }>;
  /**
   * With mutual TLS: the member ids the caller's verified certificate names (undefined: no
   * verified certificate). Absent on an insecure node, which takes every caller at its word.
   */
  peerIdentity?: (call: { getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: PeerCertificate } }) => string[] | undefined;
  /** The cluster's member ids now (the configuration in force): a certificate must name one of them. */
  memberIds?: () => readonly string[];
  /** This node's incarnation ('' in a data dir from before incarnations: nothing is checked). */
  incarnation?: string;
  /** A peer's batch reported the feature level its build supports (0 from builds before feature levels). */
  onFeatureLevel?: (from: string, level: number) => void;
  /** A peer's batch named its sender's incarnation (the leader binds unbound members with it). */
  onIncarnation?: (from: string, incarnation: string) => void;
  /**
   * Checks a forwarded command before it is proposed (undefined: fine; else why not): the peer
   * port never puts bytes into the log that the state machine would not decode.
   */
  checkCommand?: (command: Uint8Array) => string | undefined;
  /** Another node's proposer forwarded a command here (a stopping node keeps this port open while they do). */
  onForwarded?: () => void;
}

/** Why a caller may not speak as `claimed` (undefined: it may). */
type PeerCheck = (claimed: string | undefined) => HeraldError | undefined;

export function createPeerService(d: PeerServiceDeps): RaftServiceServer {
  const mismatch = (got: string) =>
    toServiceError(new HeraldError('CLUSTER_MISMATCH', `cluster id ${got || '(none)'} does not match this node's ${d.clusterId}`));
  const incarnations = incarnationCheck(d.selfId, d.incarnation ?? '', () => d.driver.confState(), d.logger);
  let loggedMismatch = false;
  let loggedImpostor = false;
  /**
   * The check for one call: with mutual TLS the caller's certificate must name a member, and
   * whatever the call says it comes from (a Raft message's sender, a snapshot's leader) must be
   * that member. `claimed` undefined: any member may make the call (Forward, ReadIndex).
   */
  const peerCheck = (call: Parameters<NonNullable<PeerServiceDeps['peerIdentity']>>[0]): PeerCheck => {
    if (!d.peerIdentity) return () => undefined;
    const named = d.peerIdentity(call);
    const members = d.memberIds?.();
    const ids = (named ?? []).filter((id) => !members || members.includes(id));
    return (claimed) => {
      let err: HeraldError | undefined;
      if (named === undefined) err = new HeraldError('UNAUTHENTICATED', 'the peer port takes only callers with a certificate from the peer CA');
      else if (ids.length === 0)
        err = new HeraldError('PERMISSION_DENIED', `the peer certificate names ${named.length ? `member ${named.join(', ')}, not a member of this cluster` : 'no member (SAN URI urn:herald:member:<id>)'}`);
      else if (claimed !== undefined && !ids.includes(claimed))
        err = new HeraldError('PERMISSION_DENIED', `a certificate for member ${ids.join(', ')} cannot speak as member ${claimed || '(none)'}`);
      if (err && !loggedImpostor) {
        loggedImpostor = true;
        d.logger.error({ named, claimed, reason: err.message }, 'peer call refused (certificate does not match)');
      }
      return err;
    };
  };

  return {
    stream(call: ServerReadableStream<StreamRequest, StreamResponse>, callback: sendUnaryData<StreamResponse>) {
      let done = false;
      const finish = (err: ServiceError | null) => {
        if (done) return;
        done = true;
        callback(err, err ? undefined : {});
      };
      const check = peerCheck(call);
      call.on('data', (req: StreamRequest) => {
        if (done) return;
        // Every sender the batch names must be the certificate's member (an empty batch: any member).
        const senders = [...req.messages.map((m) => m.from), ...(req.effects.length > 0 ? [req.effectsFrom] : [])];
        const refused = senders.length === 0 ? check(undefined) : senders.map(check).find((e) => e !== undefined);
        if (refused) {
          finish(toServiceError(refused));
          return;
        }
        if (req.clusterId !== d.clusterId) {
          if (!loggedMismatch) {
            loggedMismatch = true;
            d.logger.error({ theirs: req.clusterId, ours: d.clusterId }, 'peer from another cluster; refusing its stream');
          }
          finish(mismatch(req.clusterId));
          return;
        }
        const wrongTarget = incarnations.wrongTarget(req);
        if (wrongTarget) {
          finish(toServiceError(wrongTarget));
          return;
        }
        const messages = incarnations.filter(req, d.transport.receive(req));
        // The sender's build (not from an incarnation the configuration does not list).
        const from = messages[0]?.from ?? (req.messages.length === 0 && req.effects.length > 0 ? req.effectsFrom : undefined);
        if (from !== undefined) {
          d.onFeatureLevel?.(from, req.featureLevel);
          d.onIncarnation?.(from, req.senderIncarnation);
        }
        d.driver.step(messages);
        const effects = d.transport.receiveEffects(req);
        if (effects.length > 0) d.driver.receiveEffects(effects);
      });
      call.on('end', () => finish(null));
      call.on('error', () => finish(null));
    },

    installSnapshot(call: ServerReadableStream<InstallSnapshotRequest, InstallSnapshotResponse>, callback: sendUnaryData<InstallSnapshotResponse>) {
      const check = peerCheck(call);
      void (async () => {
        let writer: SnapshotWriter | undefined;
        let header: import('../../gen/herald/raft/v1/raft.js').SnapshotHeader | undefined;
        try {
          for await (const req of call as AsyncIterable<InstallSnapshotRequest>) {
            const part = req.part;
            if (!part) continue;
            if (part.$case === 'header') {
              header = part.header;
              const refused = check(header.from);
              if (refused) {
                callback(toServiceError(refused));
                return;
              }
              if (header.clusterId !== d.clusterId) {
                callback(mismatch(header.clusterId));
                return;
              }
              if (header.to !== d.selfId || !header.meta) throw new HeraldError('INVALID_ARGUMENT', 'snapshot header is not for this node');
              writer = await SnapshotWriter.create(d.snapshotDir, snapshotMetaFromPb(header.meta));
            } else if (part.$case === 'chunk') {
              if (!writer) throw new HeraldError('INVALID_ARGUMENT', 'snapshot chunk before header');
              await writer.write(part.chunk.data);
            } else {
              if (!writer || !header?.meta) throw new HeraldError('INVALID_ARGUMENT', 'snapshot trailer before header');
              await writer.finish(part.trailer.totalBytes, part.trailer.sha256);
              writer = undefined;
              const meta = snapshotMetaFromPb(header.meta);
              d.logger.info({ from: header.from, index: meta.index, bytes: part.trailer.totalBytes }, 'snapshot received');
              const installed = await d.driver.offerSnapshot(header.from, header.term, meta);
              callback(null, { installed, term: d.driver.status().term, error: installed ? '' : 'not installed (stale or already held)' });
              return;
            }
          }
          throw new HeraldError('INVALID_ARGUMENT', 'snapshot stream ended without a trailer');
        } catch (e) {
          await writer?.abort();
          d.logger.warn({ err: e }, 'snapshot receive failed');
          callback(null, { installed: false, term: d.driver.status().term, error: e instanceof Error ? e.message : String(e) });
        }
      })();
    },

    forward(call, callback: sendUnaryData<ForwardResponse>) {
      const req: ForwardRequest = call.request;
      const refused = peerCheck(call)(undefined);
      if (refused) {
        callback(toServiceError(refused));
        return;
      }
      if (req.clusterId !== d.clusterId) {
        callback(mismatch(req.clusterId));
        return;
      }
      const bad = d.checkCommand?.(req.command);
      if (bad !== undefined) {
        callback(toServiceError(new HeraldError('INVALID_ARGUMENT', `forwarded command refused: ${bad}`)));
        return;
      }
      const mayForward = call.metadata.get(FORWARDED_KEY).length === 0;
      if (!mayForward) d.onForwarded?.();
      const timeoutMs = req.timeoutMs > 0 ? req.timeoutMs : undefined;
      d.propose(req.command, timeoutMs, mayForward).then(
        (o) => callback(null, { result: Buffer.from(o.result.buffer, o.result.byteOffset, o.result.byteLength), index: o.index }),
        (e: unknown) => callback(toServiceError(e)),
      );
    },

    readIndex(call, callback: sendUnaryData<ReadIndexResponse>) {
      const req: ReadIndexRequest = call.request;
      const refused = peerCheck(call)(undefined);
      if (refused) {
        callback(toServiceError(refused));
        return;
      }
      if (req.clusterId !== d.clusterId) {
        callback(mismatch(req.clusterId));
        return;
      }
      d.driver.readIndex().then(
        (index) => callback(null, { index }),
        (e: unknown) => callback(toServiceError(e)),
      );
    },
  };
}

