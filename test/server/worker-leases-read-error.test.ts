// A heartbeat naming a run the lease table does not know makes the leader read the run (was only
// the ack of its result lost?). A store read that fails there tells nothing: no lease-lost on a
// guess and no unhandled rejection (which would take the node down) — the scheduler simulator's
// store faults found the rejection; the next heartbeat asks again.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../src/gen/herald/v1/run.js';
import { WorkerLeases, type WorkerLeasesDeps } from '../../src/server/leader/leases/worker-leases.js';
import type { WorkerSession } from '../../src/server/leader/worker-session.js';

function leasesWith(getRun: (id: string) => Promise<Run | undefined>) {
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
  const deps = {
    reads: { getRun, runningRuns: async () => [], unsafe: { acceptStaleTokens: false, adoptWithoutTokenCheck: false } },
    jobs: { get: () => undefined },
    leases: { renew: () => 'unknown-run' },
    config: { defaultLeaseMs: 1000 },
    log: logger,
    now: () => 0,
  } as unknown as WorkerLeasesDeps;
  const sent: unknown[] = [];
  const session = { workerId: 'w1', send: (m: unknown) => sent.push(m) } as unknown as WorkerSession;
  return { leases: new WorkerLeases(deps), session, sent, warnings };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('heartbeat of a run the leader does not lease', () => {
  it('a run the store does not have: lease lost is sent', async () => {
    const t = leasesWith(async () => undefined);
    t.leases.heartbeat(t.session, [{ runId: 'j@1', fencingToken: 3 }]);
    await settle();
    expect(t.sent).toHaveLength(1);
  });

  it('a failing store read: nothing sent, a warning, no unhandled rejection', async () => {
    const t = leasesWith(async () => {
      throw Object.assign(new Error('injected I/O error'), { code: 'LEVEL_IO_ERROR' });
    });
    t.leases.heartbeat(t.session, [{ runId: 'j@1', fencingToken: 3 }]);
    await settle();
    expect(t.sent).toHaveLength(0);
    expect(t.warnings).toEqual([expect.stringMatching(/could not read a heartbeat's unknown run/)]);
  });
});
