// Cluster time must not jump ahead when a peer's first heartbeat answer after an outage carries
// a huge round trip (timed from a request sent before the outage): such a sample is dropped.
import { describe, expect, it } from 'vitest';
import { ClusterClock } from '../../src/server/node/cluster-clock.js';

describe('cluster clock and stale round trips', () => {
  it('ignores samples whose round trip exceeds the freshness window', () => {
    let wall = 1_000_000;
    let mono = 0;
    const clock = new ClusterClock({ selfId: 'a', voters: ['a', 'b', 'c'], wall: { nowMs: () => wall }, monotonic: { nowMs: () => mono }, maxSampleAgeMs: 2000 });
    clock.observe('b', wall, 2);
    clock.observe('c', wall, 2);
    expect(clock.nowMs()).toBe(wall + 1);
    wall += 30_000;
    mono += 30_000;
    // Both peers answer after 30 s of unreachability; their RTTs were timed from the old request.
    clock.observe('b', wall, 30_000);
    clock.observe('c', wall, 30_000);
    // Without fresh usable samples there is no quorum: no cluster time rather than one 15 s ahead.
    expect(clock.nowMs()).toBeUndefined();
    clock.observe('b', wall, 4);
    const t = clock.nowMs();
    expect(t).toBeDefined();
    expect(t! - wall).toBeLessThanOrEqual(2);
  });
});
