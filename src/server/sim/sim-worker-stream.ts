// A worker's stream to one simulated node, in memory: the server end is what the real
// WorkerService handler (api/worker-service.ts) takes for a gRPC duplex call (events 'data',
// 'end', 'close'; write, end, destroy), the worker end gets the ConnectResponse messages. Each
// message arrives 1..maxDelay units later, as an event of the receiving side's process: a
// message to a crashed node or to a crashed worker vanishes. A crash of either side closes the
// stream for the other (the TCP connection dies with the process).
import { EventEmitter } from 'node:events';
import type { ConnectRequest, ConnectResponse } from '../../gen/herald/v1/worker_service.js';
import type { Prng } from '../../raft/sim/prng.js';
import type { Owner, SimScheduler } from '../../raft/sim/sim-scheduler.js';

export interface WorkerEnd {
  /** A message from the node. */
  received(msg: ConnectResponse): void;
  /** The stream is over (ended by the node, or the node died). */
  closed(): void;
}

export class SimWorkerStream extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  private over = false;

  constructor(
    private readonly sched: SimScheduler,
    private readonly rng: Prng,
    private readonly maxDelay: number,
    /** The node's process: the server end's events run while it lives. */
    readonly node: Owner,
    /** The worker's process. */
    private readonly worker: Owner,
    private readonly end_: WorkerEnd,
  ) {
    super();
  }

  private delay(): number {
    return this.rng.int(1, this.maxDelay + 1);
  }

  // ---- the server end (what the handler calls) ----

  write(msg: ConnectResponse): boolean {
    if (this.over || this.writableEnded) return false;
    this.sched.at(this.sched.now + this.delay(), this.worker, () => {
      if (!this.over) this.end_.received(msg);
    });
    return true;
  }

  end(): void {
    if (this.writableEnded) return;
    this.writableEnded = true;
    this.sched.at(this.sched.now + this.delay(), this.worker, () => this.close());
  }

  destroy(): void {
    this.destroyed = true;
    this.close();
  }

  // ---- the worker end ----

  /** The worker sends a message (delivered to the node's handler unless the stream is over). */
  send(msg: ConnectRequest): void {
    if (this.over) return;
    this.sched.at(this.sched.now + this.delay(), this.node, () => {
      if (!this.over) this.emit('data', msg);
    });
  }

  /** Either side's process died, or the worker hung up: both ends see the stream close. */
  close(): void {
    if (this.over) return;
    this.over = true;
    this.destroyed = true;
    if (this.node.alive) this.emit('close');
    if (this.worker.alive) this.end_.closed();
  }

  get isOver(): boolean {
    return this.over;
  }
}
