import { describe, expect, it } from 'vitest';
import { EXECUTION_TIMEOUT_GRACE_MS, LeaseTable, remainingExecutionMs } from '../../src/server/leader/leases/lease-table.js';
import { Job } from '../../src/gen/herald/v1/job.js';
import { Run } from '../../src/gen/herald/v1/run.js';

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
    table.adopt('a', 1, 'w1', 300, { taskType: 't', jobId: 'a' });
    table.adopt('b', 2, 'w2', 100, { taskType: 't', jobId: 'b' });
    mono.ms = 5200;
    expect(table.expired().map((l) => l.runId)).toEqual(['b']);
    mono.ms = 5300;
    expect(table.expired().map((l) => l.runId)).toEqual(['b', 'a']);
    expect(table.expired(1).map((l) => l.runId)).toEqual(['b']);
    table.release('b');
    expect(table.heldBy('w1').map((l) => l.runId)).toEqual(['a']);
    expect(table.size).toBe(1);
  });

  it('heartbeats do not carry a lease past its execution timeout plus grace; only then is it timed out', () => {
    const mono = new FakeMono();
    const table = new LeaseTable(mono);
    const lease = table.grant('r1', 3, 'w1', 1000);
    table.limitExecution(lease, 1500);
    const end = 1500 + EXECUTION_TIMEOUT_GRACE_MS;
    for (mono.ms = 500; mono.ms < end; mono.ms += 500) {
      expect(table.renew('r1', 3, 'w1')).toBe('renewed');
      expect(table.expired()).toEqual([]);
      expect(table.timedOut(lease)).toBe(false);
    }
    mono.ms = end;
    expect(table.expired().map((l) => l.runId)).toEqual(['r1']);
    expect(table.timedOut(lease)).toBe(true);
    // A silent holder loses the lease at its deadline first: that is an expiry, not a timeout.
    const quiet = table.grant('r2', 4, 'w1', 1000);
    table.limitExecution(quiet, 60_000);
    mono.ms += 1000;
    expect(table.expired().map((l) => l.runId)).toContain('r2');
    expect(table.timedOut(quiet)).toBe(false);
  });

  it('an adopted attempt keeps the execution time it had left (from its start, in cluster time)', () => {
    const run = Run.fromPartial({ attempts: [{ startedUnixMs: 10_000 }] });
    const job = Job.fromPartial({ spec: { executionTimeoutMs: 5_000 } });
    expect(remainingExecutionMs(run, job, 12_000)).toBe(3_000);
    expect(remainingExecutionMs(run, job, 20_000)).toBe(-5_000);
    expect(remainingExecutionMs(run, job, undefined)).toBe(5_000);
    expect(remainingExecutionMs(run, Job.fromPartial({ spec: {} }), 12_000)).toBeUndefined();
    const mono = new FakeMono();
    const table = new LeaseTable(mono);
    const lease = table.adopt('r', 1, 'w', 30_000, { taskType: 't', jobId: 'r' });
    table.limitExecution(lease, -5_000);
    // Already past: timed out once the grace is over.
    mono.ms = EXECUTION_TIMEOUT_GRACE_MS;
    expect(table.timedOut(lease)).toBe(true);
  });
});
