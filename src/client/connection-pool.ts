// One gRPC channel per node address, shared by the service clients for that node. Leader changes
// move traffic between a handful of addresses; keeping their channels open avoids a TCP + HTTP/2
// handshake on every redirect, and close() tears them all down in one place.
import { Channel, connectivityState, credentials as grpcCredentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { ClusterServiceClient } from '../gen/herald/v1/cluster_service.js';
import { JobServiceClient } from '../gen/herald/v1/job_service.js';
import { WorkerServiceClient } from '../gen/herald/v1/worker_service.js';
import { WatchServiceClient } from '../gen/herald/v1/watch_service.js';

export interface ConnectionOptions {
  /** Channel credentials; insecure by default (local and in-cluster use). */
  credentials?: ChannelCredentials;
  /** Extra grpc-js channel options (keepalive, message sizes). */
  channelOptions?: ChannelOptions;
}

interface NodeConnection {
  channel: Channel;
  jobs?: JobServiceClient;
  cluster?: ClusterServiceClient;
  workers?: WorkerServiceClient;
  watch?: WatchServiceClient;
}

// The server takes and sends messages up to 64 MiB (a CreateJobs of many large specs, its
// answer); grpc-js clients would refuse to receive more than 4 MiB by default.
const MESSAGE_LIMITS: ChannelOptions = {
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
};

export class ConnectionPool {
  private readonly nodes = new Map<string, NodeConnection>();
  private readonly credentials: ChannelCredentials;
  private closed = false;

  constructor(private readonly options: ConnectionOptions = {}) {
    this.credentials = options.credentials ?? grpcCredentials.createInsecure();
  }

  private node(address: string): NodeConnection {
    if (this.closed) throw new Error('connection pool is closed');
    let node = this.nodes.get(address);
    if (!node) {
      node = { channel: new Channel(address, this.credentials, { ...MESSAGE_LIMITS, ...this.options.channelOptions }) };
      this.nodes.set(address, node);
    }
    return node;
  }

  jobs(address: string): JobServiceClient {
    const node = this.node(address);
    return (node.jobs ??= new JobServiceClient(address, this.credentials, { channelOverride: node.channel }));
  }

  cluster(address: string): ClusterServiceClient {
    const node = this.node(address);
    return (node.cluster ??= new ClusterServiceClient(address, this.credentials, { channelOverride: node.channel }));
  }

  workers(address: string): WorkerServiceClient {
    const node = this.node(address);
    return (node.workers ??= new WorkerServiceClient(address, this.credentials, { channelOverride: node.channel }));
  }

  watch(address: string): WatchServiceClient {
    const node = this.node(address);
    return (node.watch ??= new WatchServiceClient(address, this.credentials, { channelOverride: node.channel }));
  }

  /**
   * Whether a call to `address` would go out now: true once its channel is connected, or when
   * connecting failed outright (the call then fails fast, as before); false when it is still
   * connecting at `deadline` (epoch ms) — a SYN into a silent network, which can hang for minutes.
   */
  whenConnecting(address: string, deadline: number): Promise<boolean> {
    const channel = this.node(address).channel;
    return new Promise((resolve) => {
      const check = (): void => {
        const state = channel.getConnectivityState(true);
        if (state === connectivityState.READY || state === connectivityState.TRANSIENT_FAILURE || state === connectivityState.SHUTDOWN) return resolve(true);
        if (Date.now() >= deadline) return resolve(false);
        channel.watchConnectivityState(state, deadline, () => check());
      };
      check();
    });
  }

  /**
   * Closes the channel to one node (calls on it fail); the next use opens a fresh one. For a node
   * that went silent: its old connection may look healthy until TCP keepalive gives up.
   */
  drop(address: string): void {
    const node = this.nodes.get(address);
    if (!node) return;
    this.nodes.delete(address);
    node.channel.close();
  }

  /** Closes every channel; calls in flight fail with CANCELLED/UNAVAILABLE. */
  close(): void {
    this.closed = true;
    for (const node of this.nodes.values()) node.channel.close();
    this.nodes.clear();
  }
}
