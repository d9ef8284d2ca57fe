// The lease keeper's sweeps overlap: an expireLeases proposal that never answers (a leader cut
// off mid-proposal waits out its 10 s timeout) holds only its own leases, not every later expiry
// (scheduler simulator, seed 3: one hung proposal stopped all expiries for its term).
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { LeaseKeeper } from '../../src/server/leader/leases/lease-keeper.js';
import { LeaseTable } from '../../src/server/leader/leases/lease-table.js';
import { createNodeMetrics } from '../../src/server/node/metrics.js';
import { schedulerConfig } from '../../src/server/leader/leader-config.js';
import type { FsmCommand } from '../../src/fsm/index.js';
import type { LeaderTimers } from '../../src/server/leader/leader-timers.js';

class FakeMono {
  ms = 0;
  nowMs() {
    return this.ms;
  }
}

describe('LeaseKeeper', () => {
  it('proposes a later expiry while an earlier expiry proposal is still unanswered', async () => {
    const mono = new FakeMono();
    const leases = new LeaseTable(mono);
    const sweeps: Array<() => void> = [];
    const timers = {
      nowMs: () => mono.ms,
      every: (_ms: number, fn: () => void) => {
        sweeps.push(fn);
        return {} as never;
      },
      after: () => ({}) as never,
      cancel: () => undefined,
      soon: (fn: () => void) => fn(),
    } as LeaderTimers;
    const proposed: FsmCommand[] = [];
    let clusterNow = 1_800_000_000_000;
    const keeper = new LeaseKeeper({
      config: schedulerConfig({ leaseSweepMs: 50 }),
      metrics: createNodeMetrics({ nodeId: 'n1' }, { defaultMetrics: false }),
      log: pino({ level: 'silent' }),
      now: () => clusterNow,
      active: () => true,
      timers,
      // The first proposal never answers; later ones apply at once.
      propose: ((cmd: FsmCommand) => {
        proposed.push(cmd);
        if (proposed.length === 1) return new Promise(() => undefined);
        return Promise.resolve({ type: 'runItems', items: cmd.type === 'expireLeases' ? cmd.items.map(() => ({ state: 0 })) : [] });
      }) as never,
      reads: { runningRuns: async () => [] },
      jobs: { get: async () => undefined },
      leases,
      sessions: { ofWorker: () => undefined },
      dispatcher: { wake: () => undefined },
    });
    keeper.start();
    const sweep = sweeps[0]!;
    leases.grant('r1', 5, 'w1', 1000);
    mono.ms = 1500;
    sweep();
    await Promise.resolve();
    expect(proposed.map((c) => (c.type === 'expireLeases' ? c.items.map((i) => i.runId) : []))).toEqual([['r1']]);
    // r1's proposal hangs; r2's lease runs out meanwhile.
    leases.grant('r2', 6, 'w2', 1000);
    mono.ms = 3000;
    clusterNow += 1500;
    sweep();
    await Promise.resolve();
    expect(proposed.map((c) => (c.type === 'expireLeases' ? c.items.map((i) => i.runId) : []))).toEqual([['r1'], ['r2']]);
    // Stamped when proposed, not when an earlier sweep began.
    expect(proposed[1]!.nowMs).toBe(clusterNow);
    keeper.stop();
  });
});
