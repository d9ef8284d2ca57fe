// Leaving leadership before a shutdown without failing the proposals in flight. A proposal
// appended by this node as leader waits for its entry to apply here; stopping the driver first
// fails it with OUTCOME_UNKNOWN (the caller cannot tell whether it took effect). So a stopping
// leader first lets what it appended apply, then transfers leadership, and the stop waits for
// the entries the new leader commits for it, whoever did the transfer (stop() or its caller).

import type { Logger } from 'pino';
import type { MonotonicClock } from '../../raft/monotonic-clock.js';
import type { RaftDriver } from '../../raft/driver/raft-driver.js';

export class LeadershipHandover {
  /** The last entry this node had appended when it last stopped leading, and when. */
  private lost: { index: number; atMs: number } | undefined;

  constructor(
    private readonly driver: RaftDriver,

    private readonly clock: MonotonicClock,
    private readonly log: Logger,
  ) {
    driver.events.on('lostLeadership', () => {
      this.lost = { index: driver.status().lastIndex, atMs: clock.nowMs() };
    });
  }

  /**
   * On the leader: waits (at most a quarter of the grace) for the entries appended so far to
   * apply, then, with other voters, transfers leadership. Rejects when the transfer fails.
   */
  async handOver(graceMs: number): Promise<void> {
    const d = this.driver;
    if (!d.isLeader()) return;
    const start = this.clock.nowMs();
    await appliedWithin(d, d.status().lastIndex, graceMs / 4);
    if (d.confState().voters.length <= 1 || !d.isLeader()) return;
    const left = graceMs - (this.clock.nowMs() - start);
    // Up to half the grace: on a loaded machine the target's election can outlast two election
    // timeouts, and a slower handover beats failing every proposal in flight.
    const to = await d.transferLeadership(undefined, Math.max(1, Math.min(left, Math.max(d.electionTimeoutMs() * 2, graceMs / 2))));
    this.log.info({ leader: to.leaderId }, 'handed leadership over before shutdown');
  }

  /**
   * After leadership moved on: waits (until `deadline` on the monotonic clock) for the entries
   * this node appended as leader to apply, so their proposals see results. The driver keeps
   * such proposals two election timeouts after leadership is lost, so no longer than that.
   */
  settle(deadline: number): Promise<void> {
    const lost = this.lost;
    if (!lost || this.driver.isLeader()) return Promise.resolve();
    const until = Math.min(deadline, lost.atMs + this.driver.electionTimeoutMs() * 2);
    return appliedWithin(this.driver, lost.index, until - this.clock.nowMs());
  }
}

/** Resolves once `index` is applied, or after `ms`, whichever comes first; never rejects. */
function appliedWithin(driver: RaftDriver, index: number, ms: number): Promise<void> {
  if (driver.appliedIndex() >= index || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(done, ms);
    driver.waitApplied(index).then(done, done);
  });
}
