// Simulated time for the real driver: every timer, `soon` callback and I/O completion of every
// node is an event on one queue ordered by (time, sequence), run one at a time with the promise
// continuations it sets off drained before the next (as Node drains microtasks between
// callbacks). Nothing else schedules work (no real timers or I/O), so a seed replays exactly.
//
// Events belong to a node's incarnation: a crash marks it dead and its pending events vanish,
// as a killed process's timers and in-flight I/O callbacks do.

import type { DriverTimers, TimerHandle } from '../ports.js';

/** A node's incarnation; its events run only while it is alive. */
export interface Owner {
  alive: boolean;
}

interface SimEvent {
  time: number;
  seq: number;
  owner: Owner;
  fn: () => void;
  /** > 0: re-armed this many units later after each run. */
  period: number;
  cancelled: boolean;
}

/**
 * Lets the promise continuations started by the last callback run to completion. A nextTick
 * callback runs only once the microtask queue is empty (Node drains microtasks before it turns to
 * the next tick), which is all a drain needs, without a turn of the event loop per event (a
 * setImmediate per event cost more than the simulated work itself).
 */
const drainMicrotasks = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));
/** Every so many events, a real event-loop turn, so I/O and timers outside the simulation (a test runner's) are not starved. */
const EVENTS_PER_LOOP_TURN = 4096;
const loopTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class SimScheduler {
  now = 0;
  /** Callbacks run (each followed by a drain): the simulator counts them as steps. */
  ran = 0;
  private seq = 0;
  private readonly heap: SimEvent[] = [];

  at(time: number, owner: Owner, fn: () => void, period = 0): SimEvent {
    const ev: SimEvent = { time: Math.max(time, this.now), seq: this.seq++, owner, fn, period, cancelled: false };
    this.push(ev);
    return ev;
  }

  /** Runs every event due by `now`, in order, including those they schedule for `now`. */
  async runDue(): Promise<void> {
    for (;;) {
      const top = this.heap[0];
      if (!top || top.time > this.now) return;
      this.pop();
      if (top.cancelled || !top.owner.alive) continue;
      if (top.period > 0) {
        top.time += top.period;
        top.seq = this.seq++;
        this.push(top);
      }
      this.ran++;
      top.fn();
      await (this.ran % EVENTS_PER_LOOP_TURN === 0 ? loopTurn() : drainMicrotasks());
    }
  }

  /** Runs `fn` as an event of `owner` now (after what is already due), then drains. */
  async runNow(owner: Owner, fn: () => void): Promise<void> {
    this.at(this.now, owner, fn);
    await this.runDue();
  }

  private push(ev: SimEvent): void {
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && before(h[l]!, h[m]!)) m = l;
      if (r < h.length && before(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}

/**
 * One node's DriverTimers on simulated time. `unitsPerMs` is the node's clock rate: clocks of
 * different machines run at slightly different speeds (clock drift).
 */
export class SimTimers implements DriverTimers {
  constructor(
    private readonly sched: SimScheduler,
    private readonly owner: Owner,
    private readonly unitsPerMs: number,
  ) {}

  nowMs(): number {
    return this.sched.now / this.unitsPerMs;
  }

  every(ms: number, fn: () => void): TimerHandle {
    const units = Math.max(1, Math.round(ms * this.unitsPerMs));
    return this.sched.at(this.sched.now + units, this.owner, fn, units) as unknown as TimerHandle;
  }

  after(ms: number, fn: () => void): TimerHandle {
    const units = Math.max(1, Math.ceil(ms * this.unitsPerMs));
    return this.sched.at(this.sched.now + units, this.owner, fn) as unknown as TimerHandle;
  }

  cancel(h: TimerHandle): void {
    (h as unknown as SimEvent).cancelled = true;
  }

  soon(fn: () => void): void {
    this.sched.at(this.sched.now, this.owner, fn);
  }
}
