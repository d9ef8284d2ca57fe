import { credentials, type ChannelCredentials } from '@grpc/grpc-js';
import type { RaftServiceClient } from '../../gen/herald/raft/v1/raft.js';
import { DEFAULT_MAX_BATCH_BYTES, PeerRaftClient, peerChannelOptions } from './peer-transport.js';

/** A client for a node's peer port (tests, benches and tools use Forward/ReadIndex with it). */
export function raftClient(address: string, creds: ChannelCredentials = credentials.createInsecure()): RaftServiceClient {
  return new PeerRaftClient(address, creds, peerChannelOptions(DEFAULT_MAX_BATCH_BYTES + 1024 * 1024));
}
