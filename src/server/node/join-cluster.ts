// `herald server --join`: what a new node needs from the running cluster before its first start —
// the cluster id and every member's addresses (so it can answer the leader that adds it). Asked
// of the given client endpoints in turn, through ClusterService.GetStatus.
import { Metadata, type ChannelCredentials } from '@grpc/grpc-js';
import { ClusterServiceClient, type GetStatusResponse } from '../../gen/herald/v1/cluster_service.js';
import { HeraldError } from '../../herald-error.js';
import type { PeerInfo } from '../../raft/ports.js';

export interface JoinedCluster {
  clusterId: string;
  members: PeerInfo[];
}

export async function fetchCluster(endpoints: readonly string[], creds: ChannelCredentials, timeoutMs = 5_000): Promise<JoinedCluster> {
  const errors: string[] = [];
  for (const address of endpoints) {
    try {
      const st = await getStatus(address, creds, timeoutMs);
      const members = st.members.filter((m) => m.peerAddress !== '').map((m) => ({ id: m.id, peerAddress: m.peerAddress, clientAddress: m.clientAddress }));
      if (members.length === 0) throw new Error('it lists no member with a peer address');
      return { clusterId: st.clusterId, members };
    } catch (e) {
      errors.push(`${address}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  throw new HeraldError('NO_LEADER', `no --join endpoint answered with the cluster's members (${errors.join('; ')})`);
}

export function getStatus(address: string, creds: ChannelCredentials, timeoutMs: number): Promise<GetStatusResponse> {
  const client = new ClusterServiceClient(address, creds);
  return new Promise<GetStatusResponse>((resolve, reject) => {
    client.getStatus({}, new Metadata(), { deadline: Date.now() + timeoutMs }, (err, resp) => {
      client.close();
      if (err) reject(err);
      else resolve(resp);
    });
  });
}
