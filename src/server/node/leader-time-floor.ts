// A new leader's cluster time starts no lower than the highest command time already in the log
// (cluster-clock.ts, top). On becoming leader the node passes a read barrier — it returns once an
// entry of the new term has committed and the state machine has applied up to it, so the machine
// holds every entry of earlier terms, the only ones that can precede this term's in the log — and
// then gives the clock that machine's highest command time as its floor. Until then the leader
// has no cluster time, and stamps nothing.
import type { RaftDriver } from '../../raft/driver/raft-driver.js';
import type { DriverTimers } from '../../raft/ports.js';
import type { ClusterClock } from './cluster-clock.js';

export interface LeaderTimeFloorDeps {
  readonly driver: Pick<RaftDriver, 'events' | 'readIndex' | 'isLeader' | 'status' | 'electionTimeoutMs'>;
  readonly clock: Pick<ClusterClock, 'setFloor'>;
  /** The state machine's highest applied command time (SchedulerStateMachine.highestCommandTimeMs). */
  readonly highestCommandTimeMs: () => number;
  readonly timers: Pick<DriverTimers, 'after'>;
  /** False once the node is stopping (no more barriers). */
  readonly live?: () => boolean;
}

/** Arms the floor for every term this node leads. */
export function armLeaderTimeFloor(d: LeaderTimeFloorDeps): void {
  const leading = (term: number) => (d.live?.() ?? true) && d.driver.isLeader() && d.driver.status().term === term;
  const barrier = (term: number): void => {
    if (!leading(term)) return;
    d.driver.readIndex({ timeoutMs: d.driver.electionTimeoutMs() * 2 }).then(
      () => {
        if (leading(term)) d.clock.setFloor(d.highestCommandTimeMs());
      },
      // No quorum answered yet (or leadership is ending): try again while this term lasts.
      () => void d.timers.after(d.driver.electionTimeoutMs() / 2, () => barrier(term)),
    );
  };
  d.driver.events.on('becameLeader', ({ term }) => barrier(term));
}
