import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { JobServiceClient } from '../../gen/herald/v1/job_service.js';
import { HeraldError } from '../../herald-error.js';
import { fromServiceError } from '../grpc/grpc-errors.js';
import { CLIENT_SERVER_OPTIONS } from '../grpc/server-conventions.js';
import { FORWARDED_CALL_KEY, REQUEST_ID_KEY } from './unary-handler.js';

// The leader's client port takes messages up to this size; a forwarded call must too (grpc-js's
// 4 MiB default refused a large CreateJobs sent to a follower).
const FORWARD_CHANNEL_OPTIONS = {
  'grpc.max_send_message_length': CLIENT_SERVER_OPTIONS['grpc.max_receive_message_length'],
  'grpc.max_receive_message_length': CLIENT_SERVER_OPTIONS['grpc.max_send_message_length'],
};

type Unary<Req, Res> = (req: Req, md: Metadata, opts: { deadline: Date }, cb: (err: ServiceError | null, res?: Res) => void) => unknown;

/**
 * Forwards a public API call from a follower to the leader's client port, one hop only (the
 * forwarded call carries a marker; a node that gets a forwarded call and is not the leader
 * answers NOT_LEADER with the leader's address, which the SDK follows). The public API's only way
 * to the leader; node/proposer.ts forwards bare commands for the Raft node's own callers.
 */
export class LeaderForwarder {
  private clients = new Map<string, JobServiceClient>();

  async call<Req, Res>(
    leaderAddress: string,
    method: keyof JobServiceClient & string,
    request: Req,
    options: { requestId: string; timeoutMs: number },
  ): Promise<Res> {
    let client = this.clients.get(leaderAddress);
    if (!client) {
      client = new JobServiceClient(leaderAddress, credentials.createInsecure(), FORWARD_CHANNEL_OPTIONS);
      this.clients.set(leaderAddress, client);
    }
    const md = new Metadata();
    md.set(FORWARDED_CALL_KEY, '1');
    md.set(REQUEST_ID_KEY, options.requestId);
    const fn = (client[method] as unknown as Unary<Req, Res>).bind(client);
    return new Promise<Res>((resolve, reject) => {
      // grpc-js deadlines are wall-clock.
      fn(request, md, { deadline: new Date(Date.now() + options.timeoutMs) }, (err, res) => {
        if (err) reject(fromServiceError(err));
        else if (res === undefined) reject(new HeraldError('INTERNAL', `leader returned no response to ${method}`));
        else resolve(res);
      });
    });
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
