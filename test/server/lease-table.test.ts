import { describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/server/leader/leases/lease-table.js';

class FakeMono {
  ms = 0;
  nowMs() {
    return this.ms;
  }
}

describe('LeaseTable', () => {
  it('expires a lease only after a full duration without a heartbeat', () => {
    const mono = new FakeMono();
    const table = new LeaseTable(mono);
    table.grant('r1', 7, 'w1', 1000);
    mono.ms = 900;
    expect(table.renew('r1', 7, 'w1')).toBe('renewed');
    mono.ms = 1800;
    expect(table.expired()).toEqual([]);
    mono.ms = 1900;
    expect(table.expired().map((l) => l.runId)).toEqual(['r1']);
  });

  it('refuses renewals with a stale token, from another worker, or for unknown runs', () => {
    const mono = new FakeMono();
    const table = new LeaseTable(mono);
    table.grant('r1', 9, 'w1', 1000);
    expect(table.renew('r1', 8, 'w1')).toBe('stale-token');
    expect(table.renew('r1', 9, 'w2')).toBe('other-worker');
    expect(table.renew('r2', 1, 'w1')).toBe('unknown-run');
    mono.ms = 1000;
    expect(table.expired().map((l) => l.fencingToken)).toEqual([9]);
  });

  it('gives adopted runs a full lease from the takeover and lists expiries oldest first', () => {
    const mono = new FakeMono();
    mono.ms = 5000;
    const table = new LeaseTable(mono);
    table.adopt('a', 1, 'w1', 300);
    table.adopt('b', 2, 'w2', 100);
    mono.ms = 5200;
    expect(table.expired().map((l) => l.runId)).toEqual(['b']);
    mono.ms = 5300;
    expect(table.expired().map((l) => l.runId)).toEqual(['b', 'a']);
    expect(table.expired(1).map((l) => l.runId)).toEqual(['b']);
    table.release('b');
    expect(table.heldBy('w1').map((l) => l.runId)).toEqual(['a']);
    expect(table.size).toBe(1);
  });
});
