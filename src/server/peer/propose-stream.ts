// RaftService.ProposeStream on the peer port: many proposals over one bidirectional stream, each
// with its own id and outcome. Per proposal it means what a Forward call means — answered once
// the command is committed and applied here — but without a call per proposal: a unary call
// costs headers, trailers and an HTTP/2 stream on both ends, most of a proposal's CPU when many
// are in flight. Outcomes settled in one event-loop turn go out in one message.

import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { ProposalOutcome, ProposeError, ProposeStreamRequest, ProposeStreamResponse } from '../../gen/herald/raft/v1/raft.js';
import { HeraldError, isHeraldError } from '../../herald-error.js';
import { toServiceError } from '../grpc/service-error.js';

/** Proposals one stream may have in flight; more are answered LIMIT_EXCEEDED at once. */
export const MAX_STREAM_PROPOSALS_IN_FLIGHT = 4096;
/** A proposal's timeout is capped here (a caller cannot park work on a node for days). */
export const MAX_PROPOSAL_TIMEOUT_MS = 120_000;
/** An outcomes message is cut once its results reach this many bytes. */
const MAX_OUTCOME_BYTES = 1024 * 1024;

export interface ProposeStreamDeps {
  clusterId: string;
  /** Proposes one command (forwards once more when mayForward and this node is not the leader). */
  propose: (command: Uint8Array, timeoutMs: number, mayForward: boolean) => Promise<{ index: number; result: Uint8Array }>;
  maxInFlight?: number;
}

const NO_BYTES = Buffer.alloc(0);

/** The error a failed proposal is answered with: a HeraldError's code, or INTERNAL. */
export function proposeErrorOf(e: unknown): ProposeError {
  if (isHeraldError(e)) {
    return { code: e.code, message: e.message, leaderId: e.details.leaderId ?? '', leaderAddress: e.details.leaderAddress ?? '' };
  }
  return { code: 'INTERNAL', message: 'internal error (see the server log)', leaderId: '', leaderAddress: '' };
}

const failed = (id: number, e: unknown): ProposalOutcome => ({ id, result: NO_BYTES, index: 0, error: proposeErrorOf(e) });

export function handleProposeStream(
  d: ProposeStreamDeps,
  call: ServerDuplexStream<ProposeStreamRequest, ProposeStreamResponse>,
  mayForward: boolean,
): void {
  const limit = d.maxInFlight ?? MAX_STREAM_PROPOSALS_IN_FLIGHT;
  let inFlight = 0;
  let inputEnded = false;
  let closed = false;
  let outbox: ProposalOutcome[] = [];
  let outboxBytes = 0;
  let flushScheduled = false;

  const flush = () => {
    flushScheduled = false;
    if (outbox.length > 0 && !closed) call.write({ outcomes: outbox });
    outbox = [];
    outboxBytes = 0;
    if (inputEnded && inFlight === 0) close();
  };
  const answer = (o: ProposalOutcome) => {
    if (closed) return;
    outbox.push(o);
    outboxBytes += o.result.length + (o.error ? o.error.message.length + o.error.leaderAddress.length + 48 : 16);
    if (outboxBytes >= MAX_OUTCOME_BYTES) flush();
    else if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };
  const close = (err?: HeraldError) => {
    if (closed) return;
    closed = true;
    outbox = [];
    if (err) call.emit('error', toServiceError(err));
    else call.end();
  };

  call.on('data', (req: ProposeStreamRequest) => {
    if (closed) return;
    if (req.clusterId !== d.clusterId) {
      close(new HeraldError('CLUSTER_MISMATCH', `cluster id ${req.clusterId || '(none)'} does not match this node's ${d.clusterId}`));
      return;
    }
    for (const p of req.proposals) {
      if (inFlight >= limit) {
        answer(failed(p.id, new HeraldError('LIMIT_EXCEEDED', `more than ${limit} proposals in flight on one stream; wait for outcomes before sending more`)));
        continue;
      }
      if (p.command.length === 0) {
        answer(failed(p.id, new HeraldError('INVALID_ARGUMENT', 'command is empty', { field: 'proposals.command' })));
        continue;
      }
      inFlight++;
      const timeoutMs = p.timeoutMs > 0 ? Math.min(p.timeoutMs, MAX_PROPOSAL_TIMEOUT_MS) : 10_000;
      d.propose(p.command, timeoutMs, mayForward).then(
        (o) => {
          inFlight--;
          answer({ id: p.id, result: Buffer.from(o.result.buffer, o.result.byteOffset, o.result.byteLength), index: o.index, error: undefined });
        },
        (e: unknown) => {
          inFlight--;
          answer(failed(p.id, e));
        },
      );
    }
  });
  // The caller is done sending: answer what is in flight, then end the stream.
  call.on('end', () => {
    inputEnded = true;
    if (inFlight === 0 && !flushScheduled) close();
  });
  // A cancelled or broken stream: proposals in flight still run; their outcomes are dropped.
  call.on('error', () => {
    closed = true;
  });
  call.on('cancelled', () => {
    closed = true;
  });
}
