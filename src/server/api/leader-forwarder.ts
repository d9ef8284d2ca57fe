import { credentials, Metadata, type ChannelCredentials, type Client, type ServiceError } from '@grpc/grpc-js';
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

/** A generated service client's constructor (JobServiceClient, AuthServiceClient, …). */
export type ServiceClientCtor = new (address: string, creds: ChannelCredentials, options?: Record<string, unknown>) => Client;

type Unary<Req, Res> = (req: Req, md: Metadata, opts: { deadline: Date }, cb: (err: ServiceError | null, res?: Res) => void) => { cancel(): void };

/** This node's view of the leader, as the Raft driver reports it. */
export interface LeaderView {
  on(event: 'leaderChanged', listener: (l: { leaderId: string; leaderAddress: string }) => void): unknown;
  off(event: 'leaderChanged', listener: (l: { leaderId: string; leaderAddress: string }) => void): unknown;
}

/** A forwarded call in flight: where it went, and how to end it early. */
interface InFlight {
  address: string;
  abandon(err: HeraldError): void;
}

/**
 * Forwards a public API call from a follower to the leader's client port, one hop only (the
 * forwarded call carries a marker; a node that gets a forwarded call and is not the leader
 * answers NOT_LEADER with the leader's address, which the SDK follows). The public API's only way
 * to the leader; node/proposer.ts forwards bare commands for the Raft node's own callers.
 */
export class LeaderForwarder {
  private clients = new Map<string, Client>();
  private readonly inFlight = new Set<InFlight>();
  private readonly onLeaderChanged = (l: { leaderId: string; leaderAddress: string }) => this.leaderChanged(l);

  /**
   * With a leader view, a call forwarded to a leader this node stops believing in (it went
   * silent: this node's election timer ran out, or another node won) is abandoned at once rather
   * than left to its deadline: UNAVAILABLE with OUTCOME_UNKNOWN (the old leader may have
   * committed it before going quiet) and the new leader when known, which the SDK follows.
   */
  constructor(
    private readonly view?: LeaderView,
    /** How to dial the leader's client port (TLS when the cluster runs it). */
    private readonly creds: ChannelCredentials = credentials.createInsecure(),
    /** The service whose calls this forwarder carries. */
    private readonly clientCtor: ServiceClientCtor = JobServiceClient,
  ) {
    view?.on('leaderChanged', this.onLeaderChanged);
  }

  private leaderChanged(l: { leaderId: string; leaderAddress: string }): void {
    for (const f of this.inFlight) {
      if (f.address === l.leaderAddress) continue;
      f.abandon(
        new HeraldError(
          'OUTCOME_UNKNOWN',
          `the leader this call was forwarded to (${f.address}) is no longer the leader${l.leaderId ? `; the leader is now ${l.leaderId} at ${l.leaderAddress || 'an unknown address'}` : ' (an election is in progress)'}; the call may or may not have taken effect`,
          { leaderId: l.leaderId || undefined, leaderAddress: l.leaderAddress || undefined },
        ),
      );
    }
  }

  async call<Req, Res>(
    leaderAddress: string,
    /** The generated client's method name (createJob, createToken, …). */
    method: string,
    request: Req,
    options: { requestId: string; timeoutMs: number; metadata?: Metadata },
  ): Promise<Res> {
    let client = this.clients.get(leaderAddress);
    if (!client) {
      client = new this.clientCtor(leaderAddress, this.creds, FORWARD_CHANNEL_OPTIONS);
      this.clients.set(leaderAddress, client);
    }
    const md = options.metadata ?? new Metadata();
    md.set(FORWARDED_CALL_KEY, '1');
    md.set(REQUEST_ID_KEY, options.requestId);
    const fn = ((client as unknown as Record<string, Unary<Req, Res>>)[method] as Unary<Req, Res>).bind(client);
    return new Promise<Res>((resolve, reject) => {
      let done = false;
      const flight: InFlight = {
        address: leaderAddress,
        abandon: (err) => {
          if (done) return;
          done = true;
          this.inFlight.delete(flight);
          call.cancel();
          reject(err);
        },
      };
      // grpc-js deadlines are wall-clock.
      const call = fn(request, md, { deadline: new Date(Date.now() + options.timeoutMs) }, (err, res) => {
        if (done) return;
        done = true;
        this.inFlight.delete(flight);
        if (err) reject(fromServiceError(err));
        else if (res === undefined) reject(new HeraldError('INTERNAL', `leader returned no response to ${method}`));
        else resolve(res);
      });
      this.inFlight.add(flight);
    });
  }

  close(): void {
    this.view?.off('leaderChanged', this.onLeaderChanged);
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
