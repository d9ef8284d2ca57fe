// The control plane's linearizability checker (src/server/sim/sched-linearizability.ts) on
// hand-made per-job histories.
import { describe, expect, it } from 'vitest';
import { checkLinearizable } from '../../src/server/sim/sched-linearizability.js';
import type { ControlOp } from '../../src/server/sim/sim-control-client.js';

let id = 0;
const op = (o: Partial<ControlOp> & Pick<ControlOp, 'kind' | 'invokedAt'>): ControlOp => ({ id: ++id, client: 1, jobId: 'j', ...o });
const existing = new Set(['j']);

describe('control-plane linearizability checker', () => {
  it('accepts a sequential history the model gives', () => {
    const h = [
      op({ kind: 'update', expectedVersion: 1, invokedAt: 0, answeredAt: 1, outcome: 'ok', version: 2 }),
      op({ kind: 'pause', invokedAt: 2, answeredAt: 3, outcome: 'ok', version: 3, paused: true }),
      op({ kind: 'update', expectedVersion: 2, invokedAt: 4, answeredAt: 5, outcome: 'failed', errorCode: 'VERSION_MISMATCH' }),
      op({ kind: 'resume', invokedAt: 6, answeredAt: 7, outcome: 'ok', version: 4, paused: false }),
      op({ kind: 'resume', invokedAt: 8, answeredAt: 9, outcome: 'ok', version: 4, paused: false }),
      op({ kind: 'delete', invokedAt: 10, answeredAt: 11, outcome: 'ok' }),
      op({ kind: 'trigger', invokedAt: 12, answeredAt: 13, outcome: 'failed', errorCode: 'JOB_NOT_FOUND' }),
    ];
    expect(checkLinearizable(h, existing).violations).toEqual([]);
  });

  it('refuses a CAS answered from a stale version after the newer one was acknowledged', () => {
    const h = [
      op({ kind: 'update', expectedVersion: 1, invokedAt: 0, answeredAt: 1, outcome: 'ok', version: 2 }),
      op({ kind: 'update', expectedVersion: 2, invokedAt: 2, answeredAt: 3, outcome: 'failed', errorCode: 'VERSION_MISMATCH' }),
    ];
    expect(checkLinearizable(h, existing).violations).toHaveLength(1);
  });

  it('lets concurrent operations and unknown outcomes take effect in any admissible order', () => {
    const h = [
      // Concurrent with the pause below: the mismatch is explained by the pause going first.
      op({ kind: 'update', expectedVersion: 1, invokedAt: 0, answeredAt: 5, outcome: 'failed', errorCode: 'VERSION_MISMATCH', client: 2 }),
      op({ kind: 'pause', invokedAt: 1, answeredAt: 2, outcome: 'ok', version: 2, paused: true }),
      // Unknown: it applied (the version after it says so) although no answer came.
      op({ kind: 'resume', invokedAt: 6, outcome: 'unknown' }),
      op({ kind: 'update', expectedVersion: 3, invokedAt: 20, answeredAt: 21, outcome: 'ok', version: 4 }),
      // Unknown that never applied: fine too.
      op({ kind: 'delete', invokedAt: 22, outcome: 'unknown' }),
    ];
    expect(checkLinearizable(h, existing).violations).toEqual([]);
    // Without the unknown resume the last update's answer has no explanation.
    expect(checkLinearizable(h.filter((o) => o.kind !== 'resume'), existing).violations).toHaveLength(1);
  });

  it('counts an operation still unanswered when the run ended as one that may have taken effect', () => {
    // Scheduler simulator seed 950960690 (3 nodes, 500 units): a pause sent at 414 had no answer
    // when the run ended; it applied (v3) before the other client's pause answered v4.
    const h = [
      op({ kind: 'update', expectedVersion: 1, invokedAt: 378, answeredAt: 389, outcome: 'ok', version: 2 }),
      op({ kind: 'pause', invokedAt: 414, client: 3 }),
      op({ kind: 'pause', invokedAt: 493, answeredAt: 499, outcome: 'ok', version: 4, paused: true }),
    ];
    expect(checkLinearizable(h, existing).violations).toEqual([]);
  });
});
