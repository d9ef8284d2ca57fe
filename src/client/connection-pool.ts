// One gRPC channel per node address, shared by the service clients for that node. Leader changes
// move traffic between a handful of addresses; keeping their channels open avoids a TCP + HTTP/2
// handshake on every redirect, and close() tears them all down in one place.
import { Channel, connectivityState, credentials as grpcCredentials, InterceptingCall, type ChannelCredentials, type ChannelOptions, type Interceptor } from '@grpc/grpc-js';
import { AuthServiceClient } from '../gen/herald/v1/auth_service.js';
import { ClusterServiceClient } from '../gen/herald/v1/cluster_service.js';
import { JobServiceClient } from '../gen/herald/v1/job_service.js';
import { WorkerServiceClient } from '../gen/herald/v1/worker_service.js';
import { WatchServiceClient } from '../gen/herald/v1/watch_service.js';
import { TaskTypeServiceClient } from '../gen/herald/v1/task_type_service.js';
import { tlsCredentials, type ClientTls } from './tls-options.js';

export interface ConnectionOptions {
  /** Channel credentials; wins over `tls`. */
  credentials?: ChannelCredentials;
  /** TLS to the cluster's client ports; without it (and `credentials`) the connection is plaintext. */
  tls?: ClientTls;
  /** Extra grpc-js channel options (keepalive, message sizes). */
  channelOptions?: ChannelOptions;
  /**
   * A bearer token from AuthService (`herald auth token create`), sent on every call as
   * `authorization: Bearer <token>`; needed when the cluster runs with auth.
   */
  token?: string;
}

interface NodeConnection {
  channel: Channel;
  jobs?: JobServiceClient;
  cluster?: ClusterServiceClient;
  workers?: WorkerServiceClient;
  watch?: WatchServiceClient;
  taskTypes?: TaskTypeServiceClient;
  auth?: AuthServiceClient;
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
  /** Every service client's options: the channel, and the token interceptor when a token is set. */
  private readonly interceptors: Interceptor[];
  private closed = false;

  constructor(private readonly options: ConnectionOptions = {}) {
    this.credentials = options.credentials ?? (options.tls ? tlsCredentials(options.tls) : grpcCredentials.createInsecure());
    // An interceptor rather than call credentials: grpc-js refuses call credentials on a
    // plaintext channel, and a token must work on a loopback test cluster too.
    this.interceptors = options.token !== undefined ? [bearerInterceptor(options.token)] : [];
  }

  private clientOptions(node: NodeConnection): { channelOverride: Channel; interceptors: Interceptor[] } {
    return { channelOverride: node.channel, interceptors: this.interceptors };
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
    return (node.jobs ??= new JobServiceClient(address, this.credentials, this.clientOptions(node)));
  }

  cluster(address: string): ClusterServiceClient {
    const node = this.node(address);
    return (node.cluster ??= new ClusterServiceClient(address, this.credentials, this.clientOptions(node)));
  }

  auth(address: string): AuthServiceClient {
    const node = this.node(address);
    return (node.auth ??= new AuthServiceClient(address, this.credentials, this.clientOptions(node)));
  }

  taskTypes(address: string): TaskTypeServiceClient {
    const node = this.node(address);
    return (node.taskTypes ??= new TaskTypeServiceClient(address, this.credentials, this.clientOptions(node)));
  }

  workers(address: string): WorkerServiceClient {
    const node = this.node(address);
    return (node.workers ??= new WorkerServiceClient(address, this.credentials, this.clientOptions(node)));
  }

  watch(address: string): WatchServiceClient {
    const node = this.node(address);
    return (node.watch ??= new WatchServiceClient(address, this.credentials, this.clientOptions(node)));
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

function bearerInterceptor(token: string): Interceptor {
  const value = `Bearer ${token}`;
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', value);
        next(metadata, listener);
      },
    });
}
