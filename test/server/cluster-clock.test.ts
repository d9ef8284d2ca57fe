import { describe, expect, it } from 'vitest';
import { ClusterClock, type Clock } from '../../src/server/node/cluster-clock.js';

class FakeClock implements Clock {
  constructor(public ms: number) {}
  nowMs(): number {
    return this.ms;
  }
}

const T = 1_700_000_000_000;

function setup(voters = ['n1', 'n2', 'n3']) {
  const wall = new FakeClock(T);
  const mono = new FakeClock(1000);
  const clock = new ClusterClock({ selfId: 'n1', voters, wall, monotonic: mono, maxSampleAgeMs: 1000 });
  return { wall, mono, clock };
}

describe('ClusterClock', () => {
  it('has no time until a quorum of voters reported', () => {
    const { clock } = setup();
    expect(clock.nowMs()).toBeUndefined();
    clock.observe('n2', T, 0);
    expect(clock.nowMs()).toBe(T);
  });

  it('ignores a leader whose own wall clock jumps forward or backward', () => {
    const { wall, clock } = setup();
    clock.observe('n2', T + 10, 0);
    clock.observe('n3', T + 20, 0);
    wall.ms = T + 3_600_000; // leader clock jumps an hour ahead
    expect(clock.nowMs()).toBe(T + 20);
    wall.ms = T - 3_600_000; // and an hour back: never runs backwards, follows the followers
    expect(clock.nowMs()).toBe(T + 20);
  });

  it('with 5 voters and only a quorum fresh, two fast clocks (a minority) do not move it ahead', () => {
    const { clock } = setup(['n1', 'n2', 'n3', 'n4', 'n5']);
    // n1 (the leader, wall T) is good; n2 and n3 run 4 s fast; n4 and n5 have not reported yet.
    clock.observe('n2', T + 4_000, 0);
    clock.observe('n3', T + 4_100, 0);
    expect(clock.nowMs()).toBe(T);
    // All five fresh: the lower median, a good clock.
    clock.observe('n4', T + 5, 0);
    clock.observe('n5', T + 10, 0);
    expect(clock.nowMs()).toBe(T + 10);
  });

  it('ignores one follower with a skewed clock', () => {
    const { clock } = setup();
    clock.observe('n2', T + 86_400_000, 0);
    clock.observe('n3', T + 5, 0);
    expect(clock.nowMs()).toBe(T + 5);
  });

  it('with two fresh estimates takes the lower, so a forward jump cannot fire early', () => {
    const { wall, clock } = setup();
    clock.observe('n2', T, 0);
    wall.ms = T + 60_000;
    expect(clock.nowMs()).toBe(T);
  });

  it('advances reported times by the monotonic time since receipt plus half the round trip', () => {
    const { wall, mono, clock } = setup();
    clock.observe('n2', T, 40);
    clock.observe('n3', T, 40);
    mono.ms += 500;
    wall.ms = T + 10_000;
    expect(clock.nowMs()).toBe(T + 20 + 500);
  });

  it('drops stale samples and loses quorum when voters go silent', () => {
    const { mono, clock } = setup();
    clock.observe('n2', T, 0);
    expect(clock.nowMs()).toBe(T);
    mono.ms += 1001;
    expect(clock.nowMs()).toBeUndefined();
  });

  it('uses the middle estimate on five voters and ignores non-voters', () => {
    const { clock } = setup(['n1', 'n2', 'n3', 'n4', 'n5']);
    clock.observe('x9', T + 999, 0);
    clock.observe('n2', T + 1, 0);
    expect(clock.nowMs()).toBeUndefined();
    clock.observe('n3', T + 2, 0);
    clock.observe('n4', T + 1_000_000, 0);
    clock.observe('n5', T - 1_000_000, 0);
    expect(clock.nowMs()).toBe(T + 1);
  });

  it('with floorRequired, has no time until a floor is set, then never goes below it (a new leader behind the old one)', () => {
    const wall = new FakeClock(T);
    const mono = new FakeClock(1000);
    const clock = new ClusterClock({ selfId: 'n1', voters: ['n1', 'n2', 'n3'], wall, monotonic: mono, maxSampleAgeMs: 1000, floorRequired: true });
    clock.observe('n2', T, 0);
    expect(clock.nowMs()).toBeUndefined();
    // The old leader stamped T + 23 s (scheduler simulator seed 74): this one's estimate is behind.
    clock.setFloor(T + 23_000);
    expect(clock.nowMs()).toBe(T + 23_000);
    // Held there (late rather than early) until the estimate passes it.
    wall.ms = T + 10_000;
    mono.ms += 10_000;
    clock.observe('n2', T + 10_000, 0);
    expect(clock.nowMs()).toBe(T + 23_000);
    wall.ms = T + 30_000;
    mono.ms += 20_000;
    clock.observe('n2', T + 30_000, 0);
    expect(clock.nowMs()).toBe(T + 30_000);
    // Leadership lost: the next term needs a floor of its own again.
    clock.reset();
    clock.observe('n2', T + 30_000, 0);
    expect(clock.nowMs()).toBeUndefined();
  });
});

