// Discovery and silent nodes: a node a call gave up on for sending nothing may still claim
// leadership in GetStatus; the router must prefer another node's claim, yet not refuse it when
// it is the only one (it may be the real leader, merely slow).
import { describe, expect, it } from 'vitest';
import { GetStatusResponse } from '../../src/gen/herald/v1/cluster_service.js';
import { LeaderRouter, type StatusProbe } from '../../src/client/leader-router.js';
import { silentLogger } from '../../src/client/logger.js';

// Every endpoint answers at once, naming the leader it was given (in endpoint order).
function probeNaming(claims: Record<string, string>): StatusProbe {
  return async (address) => GetStatusResponse.fromPartial({ leaderAddress: claims[address] ?? '' });
}

describe('LeaderRouter', () => {
  const endpoints = ['a:1', 'b:1'];
  const claims = { 'a:1': 'a:1', 'b:1': 'b:1' }; // two leader claims (say a stale one and a real one)

  it('takes the first leader claim when no node is suspected', async () => {
    const router = new LeaderRouter(endpoints, probeNaming(claims), silentLogger);
    expect(await router.discover(Date.now() + 1_000)).toBe('a:1');
  });

  it('prefers another claim over one naming a node that went silent', async () => {
    const router = new LeaderRouter(endpoints, probeNaming(claims), silentLogger);
    router.noteLeader('a:1');
    router.noteSilent('a:1');
    expect(router.leaderAddress).toBeUndefined();
    expect(await router.discover(Date.now() + 1_000)).toBe('b:1');
  });

  it('still takes the silent node when every claim names it', async () => {
    const router = new LeaderRouter(endpoints, probeNaming({ 'a:1': 'a:1', 'b:1': 'a:1' }), silentLogger);
    router.noteSilent('a:1');
    expect(await router.discover(Date.now() + 1_000)).toBe('a:1');
  });

  it('forgets the suspicion once the node answers a call', async () => {
    const router = new LeaderRouter(endpoints, probeNaming(claims), silentLogger);
    router.noteSilent('a:1');
    router.noteAnswered('a:1');
    expect(await router.discover(Date.now() + 1_000)).toBe('a:1');
  });
});
