// herald.v1.WorkerService on the client port. Any node accepts the stream; only the leader with
// its services ready keeps it. A follower (or a leader that cannot get ready) answers hello
// with a Redirect to the leader's client address and ends the stream; the worker reconnects
// there and re-attaches the runs it holds.
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { ConnectRequest, ConnectResponse, WorkerHello, WorkerServiceServer } from '../../gen/herald/v1/worker_service.js';
import { HeraldError } from '../../herald-error.js';
import type { Logger } from 'pino';
import type { LeaderServices } from '../leader/leader-services.js';
import { toServiceError } from '../grpc/service-error.js';
import { validateHello, type WorkerSession } from '../leader/worker-session.js';
import { cancelTimer, timersOf, type LeaderTimers, type TimerHandle } from '../leader/leader-timers.js';
import { principalOf } from '../auth/grpc-call-guard.js';
import type { Principal } from '../auth/principal.js';
import { Role } from '../../gen/herald/v1/auth_service.js';

export interface WorkerServiceHost {
  readonly nodeId: string;
  /** The current leader services (undefined on a follower). */
  leaderServices(): LeaderServices | undefined;
  /** Where the leader is ('' when unknown). */
  leader(): { leaderId: string; leaderAddress: string };
  /** False while the node shuts down: new streams are redirected. */
  accepting(): boolean;
  readonly heartbeatIntervalMs: number;
  /**
   * WorkerWelcome.silence_timeout_ms: a worker that hears nothing for this long leaves the stream.
   * The server pings every quarter of it; 0 sends no pings.
   */
  readonly silenceTimeoutMs: number;
  readonly log: Logger;
  /** The stream's ping timer and ready wait (default Node's; the simulator passes simulated time). */
  readonly timers?: LeaderTimers;
  /**
   * With auth on: whether a stream's token is still valid (not revoked), asked every ping tick;
   * a revoked token's stream ends with UNAUTHENTICATED. Absent: auth is off.
   */
  stillValid?(p: Principal): Promise<boolean>;
  /** The members' client addresses (the configuration in force), told to workers; absent: none. */
  memberAddresses?(): string[];
}

/**
 * The worker a hello speaks for, bound to its credential: with auth on, only task types the
 * credential lists, and the worker id recorded on leases and attempts is the principal's name plus
 * the self-chosen instance id (so results and heartbeats count only for runs this principal holds).
 */
export function boundHello(hello: WorkerHello, p: Principal): WorkerHello {
  if (p.via === 'none') return hello;
  const refused = p.role === Role.ROLE_ADMIN ? [] : hello.taskTypes.filter((t) => !p.taskTypes.has(t));
  if (refused.length > 0) {
    throw new HeraldError(
      'PERMISSION_DENIED',
      `worker credential "${p.name}" may take runs of ${[...p.taskTypes].join(', ') || 'no task type'}; not of ${refused.join(', ')}`,
      { field: 'task_types' },
    );
  }
  return { ...hello, workerId: `${p.name}:${hello.workerId}` };
}

/** How long a hello waits for a new leader's services to get ready before it is redirected. */
const READY_WAIT_MS = 5_000;

export function createWorkerService(host: WorkerServiceHost): WorkerServiceServer {
  return {
    connect(call: ServerDuplexStream<ConnectRequest, ConnectResponse>) {
      handleStream(host, call);
    },
  };
}

function handleStream(host: WorkerServiceHost, call: ServerDuplexStream<ConnectRequest, ConnectResponse>): void {
  let session: WorkerSession | undefined;
  /** The highest heartbeat seq whose renewals were applied (StreamPing.heartbeat_seq). */
  let heartbeatSeq = 0;
  /** Something arrived from the worker since the last ping tick. */
  let heard = true;
  let quietTicks = 0;
  let pinger: TimerHandle | undefined;
  const timers = timersOf(host);
  let services: LeaderServices | undefined;
  let helloSeen = false;
  /** Set once the welcome is sent; messages before it wait in `early`. */
  let live = false;
  /** The member addresses this worker was last told (welcome or ping), joined. */
  let toldMembers = '';
  let closed = false;
  const early: ConnectRequest[] = [];

  const fail = (e: unknown) => {
    if (closed) return;
    closed = true;
    const err = toServiceError(e);
    try {
      call.emit('error', err);
    } catch {
      call.destroy();
    }
  };

  const redirect = () => {
    const l = host.leader();
    closed = true;
    try {
      call.write({ message: { $case: 'redirect', redirect: { leaderId: l.leaderId === host.nodeId ? '' : l.leaderId, leaderAddress: l.leaderId === host.nodeId ? '' : l.leaderAddress } } });
      call.end();
    } catch {
      // the worker went away already
    }
  };

  const onClose = () => {
    cancelTimer(timers, pinger);
    if (session) {
      session.markClosed();
      services?.detach(session);
    }
    closed = true;
  };

  const handle = (msg: ConnectRequest) => {
    const m = msg.message;
    // A leader that stepped down keeps its streams open only until it can name the new leader:
    // it must not answer for leases it no longer manages (that would abort healthy runs).
    if (!session || !services || session.closed || !services.active) return;
    switch (m?.$case) {
      case 'credits':
        if (!Number.isInteger(m.credits.credits) || m.credits.credits <= 0) {
          fail(new HeraldError('INVALID_ARGUMENT', 'credits must be > 0'));
          return;
        }
        services.credits(session, m.credits.credits);
        return;
      case 'heartbeat':
        services.workerLeases.heartbeat(session, m.heartbeat.runs);
        if (m.heartbeat.seq > heartbeatSeq) heartbeatSeq = m.heartbeat.seq;
        return;
      case 'result':
        services.results.add(session, m.result);
        return;
      case 'batch': {
        const { results, credits } = m.batch;
        if (!Number.isInteger(credits) || credits < 0) {
          fail(new HeraldError('INVALID_ARGUMENT', `batch credits must be >= 0 (got ${credits})`));
          return;
        }
        // Results first: the credits are the slots those runs freed.
        for (const r of results) services.results.add(session, r);
        if (credits > 0) services.credits(session, credits);
        return;
      }
      case 'reattach': {
        const s = session;
        // A failed store read (re-attaching asks whether a result was recorded) ends the stream:
        // the worker reconnects and re-attaches; never an unhandled rejection.
        void services.workerLeases.reattach(s, m.reattach.runs).then(({ rejected }) => {
          for (const r of rejected) {
            s.send({ message: { $case: 'leaseLost', leaseLost: { runId: r.runId, fencingToken: r.fencingToken, reason: 'not re-attached: the lease is no longer held' } } });
          }
        }, fail);
        return;
      }
      case 'drain':
        services.drain(session);
        return;
      case 'hello':
        fail(new HeraldError('INVALID_ARGUMENT', 'hello may only be the first message'));
        return;
      default:
        return; // unknown future message: ignore
    }
  };

  const principal = principalOf(call);
  const onHello = async (given: WorkerHello) => {
    let hello: WorkerHello;
    try {
      validateHello(given);
      hello = boundHello(given, principal);
    } catch (e) {
      fail(e);
      return;
    }
    let s = host.accepting() ? host.leaderServices() : undefined;
    if (s && !s.ready) {
      const ok = await Promise.race([s.whenReady(), new Promise<boolean>((r) => timers.after(READY_WAIT_MS, () => r(false)))]);
      if (!ok) s = undefined;
    }
    if (closed) return;
    if (!s || !s.ready || !host.accepting()) {
      redirect();
      return;
    }
    services = s;
    session = s.sessions.open(hello.workerId, new Set(hello.taskTypes), hello.capacity, call, hello.batches);
    const { adopted, rejected } = await s.attach(session, hello.heldRuns);
    if (closed || !s.active) {
      s.detach(session);
      if (!closed) redirect();
      return;
    }
    const memberAddresses = host.memberAddresses?.() ?? [];
    toldMembers = memberAddresses.join(',');
    session.send({
      message: {
        $case: 'welcome',
        welcome: { nodeId: host.nodeId, heartbeatIntervalMs: host.heartbeatIntervalMs, adopted, rejected, batches: true, silenceTimeoutMs: host.silenceTimeoutMs, memberAddresses },
      },
    });
    live = true;
    host.log.info({ workerId: hello.workerId, taskTypes: hello.taskTypes, capacity: hello.capacity, adopted: adopted.length, rejected: rejected.length }, 'worker connected');
    for (const m of early.splice(0)) handle(m);
  };

  /**
   * Pings the worker (its sign that this node is still there, and the heartbeat acknowledgement
   * its lease watch counts on), and parks a worker that went silent: after three heartbeat
   * periods (or the silence bound, if longer) without a word its session takes no assignments
   * (they would vanish in the network) until it speaks again; its leases expire as usual. The
   * stream stays open: a worker that was only paused reports on it when it wakes.
   */
  const ping = (tickMs: number) => {
    if (closed) return cancelTimer(timers, pinger);
    host.stillValid?.(principal).then(
      (ok) => {
        if (!ok) fail(new HeraldError('UNAUTHENTICATED', `token "${principal.name}" was revoked`));
      },
      () => undefined,
    );
    if (heard) quietTicks = 0;
    else quietTicks++;
    heard = false;
    if (live && session && !session.isParked && quietTicks * tickMs > Math.max(3 * host.heartbeatIntervalMs, host.silenceTimeoutMs)) {
      host.log.warn({ workerId: session.workerId, silentMs: quietTicks * tickMs }, 'worker stream silent: no assignments until it speaks again');
      session.park();
    }
    if (call.writableEnded || call.destroyed) return;
    // Membership changed since the worker was last told: it learns the new members' addresses.
    let memberAddresses: string[] = [];
    if (live && host.memberAddresses) {
      const now = host.memberAddresses();
      if (now.length > 0 && now.join(',') !== toldMembers) {
        memberAddresses = now;
        toldMembers = now.join(',');
      }
    }
    try {
      call.write({ message: { $case: 'ping', ping: { heartbeatSeq, memberAddresses } } });
    } catch {
      // the stream is going away; onClose follows
    }
  };
  if (host.silenceTimeoutMs > 0) {
    const tickMs = Math.max(10, Math.floor(host.silenceTimeoutMs / 4));
    pinger = timers.every(tickMs, () => ping(tickMs));
  }

  call.on('data', (msg: ConnectRequest) => {
    heard = true;
    if (session) session.lastHeardUnixMs = Date.now();
    if (session?.isParked) {
      session.resume();
      services?.dispatcher.wake();
    }
    if (closed) return;
    if (!helloSeen) {
      if (msg.message?.$case !== 'hello') {
        fail(new HeraldError('INVALID_ARGUMENT', 'the first message on a worker stream must be hello'));
        return;
      }
      helloSeen = true;
      onHello(msg.message.hello).catch(fail);
      return;
    }
    if (!live) early.push(msg);
    else handle(msg);
  });
  call.on('end', () => {
    onClose();
    try {
      call.end();
    } catch {
      // already ended
    }
  });
  call.on('error', onClose);
  call.on('cancelled', onClose);
  call.on('close', onClose);
}
