// Closing the peer port of a node that just stopped leading without failing other nodes'
// forwards. A follower that has not yet heard of the new leader still forwards to this node. While
// the port is open such a forward is answered NOT_LEADER / SHUTTING_DOWN naming the new leader (a
// safe retry, which the proposer follows). Once the port closes, a forward the follower had
// already handed to grpc-js fails with an error that cannot say whether it was delivered — so the
// proposal fails for good. The stopping node therefore keeps the port open until no forward has
// arrived for a quiet period (an election timeout: by then every live follower has heard the new
// leader or started an election, and neither forwards here), bounded by the stop's grace.

import type { MonotonicClock } from '../../raft/monotonic-clock.js';

export class ForwardLinger {
  private lastAtMs: number | undefined;

  constructor(private readonly clock: MonotonicClock) {}

  /** A Forward call arrived. */
  seen(): void {
    this.lastAtMs = this.clock.nowMs();
  }

  /**
   * Resolves once no Forward has arrived for `quietMs`, or at `deadline` (monotonic), whichever
   * comes first; at once when none arrived in the last `quietMs`.
   */
  async quiet(quietMs: number, deadline: number): Promise<void> {
    for (;;) {
      const now = this.clock.nowMs();
      if (this.lastAtMs === undefined || now >= deadline) return;
      const quietAt = this.lastAtMs + quietMs;
      if (now >= quietAt) return;
      await new Promise((r) => setTimeout(r, Math.min(quietAt, deadline) - now));
    }
  }
}
