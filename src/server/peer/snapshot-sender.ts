// Ships the state machine's snapshot to a follower over RaftService.InstallSnapshot: a header,
// the data in chunks (streamed from the state machine's point-in-time view, with backpressure),
// and a trailer with the byte count and SHA-256.
//
// The snapshot is labelled with the state machine's own applied index (and its term from the
// log), not the log's older compaction point: the data reflects exactly that index, so the
// follower must not replay entries below it.

import { createHash } from 'node:crypto';
import type { ClientWritableStream } from '@grpc/grpc-js';
import type { InstallSnapshotRequest, InstallSnapshotResponse, RaftServiceClient } from '../../gen/herald/raft/v1/raft.js';
import type { SnapshotSend, SnapshotSent } from '../../raft/ports.js';
import type { NodeId } from '../../raft/types.js';
import { asBuffer, snapshotMetaToPb } from './message-codec.js';

export interface SendSnapshotArgs extends SnapshotSend {
  client: RaftServiceClient;
  clusterId: string;
  from: NodeId;
}

export async function sendSnapshot(a: SendSnapshotArgs): Promise<SnapshotSent> {
  const src = await a.stateMachine.snapshot();
  try {
    const index = src.appliedIndex;
    const term = a.termOf(index);
    let resolveResp!: (r: InstallSnapshotResponse) => void;
    let rejectResp!: (e: Error) => void;
    const resp = new Promise<InstallSnapshotResponse>((res, rej) => {
      resolveResp = res;
      rejectResp = rej;
    });
    const call: ClientWritableStream<InstallSnapshotRequest> = a.client.installSnapshot(
      { deadline: Date.now() + a.timeoutMs },
      (err, r) => (err ? rejectResp(err) : resolveResp(r)),
    );
    call.on('error', () => undefined);
    const write = async (req: InstallSnapshotRequest): Promise<void> => {
      if (!call.write(req)) {
        await new Promise<void>((res, rej) => {
          const onDrain = () => {
            call.off('error', onErr);
            res();
          };
          const onErr = (e: Error) => {
            call.off('drain', onDrain);
            rej(e);
          };
          call.once('drain', onDrain);
          call.once('error', onErr);
        });
      }
    };
    const hash = createHash('sha256');
    let bytes = 0;
    const sending = (async () => {
      await write({
        part: {
          $case: 'header',
          header: { clusterId: a.clusterId, from: a.from, to: a.to, term: a.term, meta: snapshotMetaToPb({ index, term, conf: a.confAt(index) }) },
        },
      });
      for await (const chunk of src.chunks()) {
        hash.update(chunk);
        bytes += chunk.length;
        await write({ part: { $case: 'chunk', chunk: { data: asBuffer(chunk) } } });
      }
      await write({ part: { $case: 'trailer', trailer: { totalBytes: bytes, sha256: hash.digest() } } });
      call.end();
    })();
    // If the receiver fails early the response arrives first; surface whichever error comes.
    const [r] = await Promise.all([resp, sending.catch((e: unknown) => resp.then(() => Promise.reject(e)))]);
    if (!r.installed) throw new Error(`follower ${a.to} did not install snapshot ${index}: ${r.error || 'no reason given'}`);
    return { index, bytes };
  } finally {
    await src.close();
  }
}
