// Cluster time (DESIGN §5a): the time the leader fires by, which one skewed wall clock cannot move.
//
// The leader keeps, per voter, the wall clock that voter last reported (in a heartbeat response)
// together with the round trip and the leader's monotonic time of receipt. A voter's current wall
// time is estimated as reported + rtt/2 + (monotonic time elapsed since receipt). Cluster time is the
// lower median of the fresh estimates (the leader's own wall clock included) — or lower, so that
// a minority of fast clocks is never chosen while only part of the voters are fresh — and requires
// a quorum of fresh estimates; it never runs backwards. With 3 voters one bad clock — the leader's own
// included — sits at an end of the sorted estimates and is never chosen; with only two fresh
// estimates the lower one wins, so a clock jumping forward cannot make runs fire early.
//
// Across leaders: each leader's estimate is its own, and a new leader's may sit well behind the
// old one's (a slow clock among only two fresh estimates; scheduler simulator seed 74: 23 s). With
// `floorRequired`, a leader's cluster time is unknown until it is given a floor (setFloor: the
// highest command time in its state machine once that holds every entry of earlier terms,
// leader-time-floor.ts), and from then on never below it. A leader whose estimate is behind the
// floor holds cluster time there until the estimate catches up: late rather than early, as with a
// slow clock among two fresh estimates (carrying the floor forward on the monotonic clock would
// add that clock's drift over the whole gap).

export interface Clock {
  nowMs(): number;
}

export interface ClusterClockOptions {
  selfId: string;
  /** The voters in force (a function when membership can change at runtime). */
  voters: readonly string[] | (() => readonly string[]);
  /** This node's wall clock (in tests it may carry an injected offset). */
  wall: Clock;
  /** This node's monotonic clock. */
  monotonic: Clock;
  /** Samples older than this (monotonic ms) are not used; a few election timeouts. */
  maxSampleAgeMs: number;
  /** Cluster time is unknown until setFloor after each reset (a leader node; see the top of this file). */
  floorRequired?: boolean;
}

interface Sample {
  wallMs: number;
  rttMs: number;
  receivedAtMonoMs: number;
}

/** Cluster time as the leader estimates it from its voters' reports (see the top of this file). */
export class ClusterClock {
  private readonly samples = new Map<string, Sample>();
  private lastMs = 0;
  /** The floor (undefined: none since the last reset). */
  private floor: number | undefined;
  private readonly floorListeners: Array<() => void> = [];

  constructor(private readonly options: ClusterClockOptions) {}

  private voters(): readonly string[] {
    const v = this.options.voters;
    return typeof v === 'function' ? v() : v;
  }

  /** Records a voter's wall clock as reported in a response that took rttMs to come back. */
  observe(peerId: string, peerWallMs: number, rttMs: number): void {
    if (peerId === this.options.selfId || !this.voters().includes(peerId)) return;
    if (!Number.isFinite(peerWallMs) || peerWallMs <= 0) return;
    // A reply that took longer than the freshness window (e.g. the first answer after the peer was
    // unreachable, timed from a long-unanswered request) says nothing reliable about the peer's
    // clock: rtt/2 would push the estimate — and cluster time, which never runs back — far ahead.
    if (Number.isFinite(rttMs) && rttMs > this.options.maxSampleAgeMs) return;
    const rtt = Number.isFinite(rttMs) && rttMs >= 0 ? rttMs : 0;
    this.samples.set(peerId, { wallMs: peerWallMs, rttMs: rtt, receivedAtMonoMs: this.options.monotonic.nowMs() });
  }

  /** Forgets all samples (on losing leadership: a new term starts from fresh reports). */
  reset(): void {
    this.samples.clear();
    this.floor = undefined;
  }

  /** No cluster time below `ms` from now on (see the top of this file). */
  setFloor(ms: number): void {
    this.floor = Math.max(this.floor ?? 0, ms);
    for (const fn of this.floorListeners) fn();
  }

  /** Calls `fn` whenever a floor is set: cluster time may have become known (a leader's first writes wait for it). */
  onFloor(fn: () => void): void {
    this.floorListeners.push(fn);
  }

  /** Whether a floor was set since the last reset. */
  get hasFloor(): boolean {
    return this.floor !== undefined;
  }

  /**
   * The cluster time, or undefined while fewer than a quorum of voters have fresh estimates.
   * Never smaller than a value returned before.
   */
  nowMs(): number | undefined {
    const floor = this.floor;
    if (this.options.floorRequired && floor === undefined) return undefined;
    const mono = this.options.monotonic.nowMs();
    const estimates = [this.options.wall.nowMs()];
    const voters = this.voters();
    for (const [id, s] of this.samples) {
      if (!voters.includes(id)) continue;
      const age = mono - s.receivedAtMonoMs;
      if (age > this.options.maxSampleAgeMs) continue;
      estimates.push(s.wallMs + s.rttMs / 2 + age);
    }
    const quorum = Math.floor(voters.length / 2) + 1;
    if (estimates.length < quorum) return undefined;
    estimates.sort((a, b) => a - b);
    // Up to a minority of the voters may have bad clocks, all of them among the fresh estimates:
    // the (minority+1)-th largest has a good clock at or above it, so bad clocks cannot move
    // fires early. With every voter fresh it is the lower median; with 5 voters and only 3 fresh
    // the lower median could be one of two fast clocks (scheduler simulator seed 53426717).
    const minority = quorum - 1;
    const chosen = estimates[Math.max(0, Math.min(Math.floor((estimates.length - 1) / 2), estimates.length - 1 - minority))]!;
    this.lastMs = Math.max(this.lastMs, Math.floor(chosen), floor ?? 0);
    return this.lastMs;
  }

  /** The last cluster time handed out (0 before the first). */
  get lastKnownMs(): number {
    return this.lastMs;
  }
}
