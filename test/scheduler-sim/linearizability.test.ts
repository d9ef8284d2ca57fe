// The control plane's linearizability checker (src/server/sim/sched-linearizability.ts) on
// hand-made per-job histories.
import { describe, expect, it } from 'vitest';
import { RunState } from '../../src/gen/herald/v1/run.js';
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

  it('judges GetJob reads against the register', () => {
    const h = [
      op({ kind: 'pause', invokedAt: 0, answeredAt: 1, outcome: 'ok', version: 2, paused: true }),
      op({ kind: 'get', invokedAt: 2, answeredAt: 3, outcome: 'ok', version: 2, paused: true, client: 2 }),
    ];
    expect(checkLinearizable(h, existing).violations).toEqual([]);
    // A follower answering from before the pause it had been told of: stale.
    const stale = [h[0]!, op({ kind: 'get', invokedAt: 2, answeredAt: 3, outcome: 'ok', version: 1, paused: false, client: 2 })];
    expect(checkLinearizable(stale, existing).violations).toHaveLength(1);
    const gone = [op({ kind: 'delete', invokedAt: 0, answeredAt: 1, outcome: 'ok' }), op({ kind: 'get', invokedAt: 2, answeredAt: 3, outcome: 'ok', version: 1, paused: false })];
    expect(checkLinearizable(gone, existing).violations).toHaveLength(1);
  });

  it('follows the runs trigger and backfill answers named through cancels and ListRuns reads', () => {
    const h = [
      op({ kind: 'trigger', invokedAt: 0, answeredAt: 1, outcome: 'ok', runIds: ['j@m1'] }),
      op({ kind: 'backfill', invokedAt: 2, answeredAt: 3, outcome: 'ok', runIds: ['j@b1', 'j@b2'] }),
      op({ kind: 'cancel', runId: 'j@m1', invokedAt: 4, answeredAt: 5, outcome: 'ok' }),
      // The scheduler ended j@b1 by itself: the cancel is refused, and stays so.
      op({ kind: 'cancel', runId: 'j@b1', invokedAt: 6, answeredAt: 7, outcome: 'failed', errorCode: 'INVALID_STATE' }),
      op({
        kind: 'list',
        invokedAt: 8,
        answeredAt: 9,
        outcome: 'ok',
        runs: [
          { id: 'j@m1', state: RunState.RUN_STATE_CANCELLED },
          { id: 'j@b1', state: RunState.RUN_STATE_SUCCEEDED },
          { id: 'j@b2', state: RunState.RUN_STATE_RUNNING },
        ],
      }),
    ];
    expect(checkLinearizable(h, existing).violations).toEqual([]);
    // A read still showing the cancelled run running is stale.
    const staleRead = [...h.slice(0, 4), { ...h[4]!, runs: [{ id: 'j@m1', state: RunState.RUN_STATE_RUNNING }] }];
    expect(checkLinearizable(staleRead, existing).violations).toHaveLength(1);
    // A cancel accepted after the run was seen ended cannot be.
    const lateCancel = [...h, op({ kind: 'cancel', runId: 'j@b1', invokedAt: 10, answeredAt: 11, outcome: 'ok' })];
    expect(checkLinearizable(lateCancel, existing).violations).toHaveLength(1);
    // A backfill naming a run that exists already (it skips slots backfilled before).
    const twice = [...h.slice(0, 2), op({ kind: 'backfill', invokedAt: 4, answeredAt: 5, outcome: 'ok', runIds: ['j@b2'] })];
    expect(checkLinearizable(twice, existing).violations).toHaveLength(1);
    // A named run missing from a complete page: only a job whose retention trims may lose one, once it may have ended.
    const missing = [h[0]!, op({ kind: 'list', invokedAt: 2, answeredAt: 3, outcome: 'ok', runs: [] })];
    expect(checkLinearizable(missing, existing).violations).toHaveLength(1);
    expect(checkLinearizable(missing, existing, () => true).violations).toEqual([]);
  });

  it('a backfill refused for reaching trimmed history (feature level 4) fits only a job that exists and whose retention trims, and changes nothing', () => {
    const trimmed = { outcome: 'failed' as const, errorCode: 'INVALID_STATE', errorReason: 'HISTORY_TRIMMED' };
    const h = [
      op({ kind: 'backfill', invokedAt: 0, answeredAt: 1, outcome: 'ok', runIds: ['j@b1'] }),
      // j@b1 ran and retention trimmed it: backfilling its slot again is refused, not run again.
      op({ kind: 'backfill', invokedAt: 2, answeredAt: 3, ...trimmed }),
      op({ kind: 'pause', invokedAt: 4, answeredAt: 5, outcome: 'ok', version: 2, paused: true }),
    ];
    const mayTrim = () => true;
    expect(checkLinearizable(h, existing, mayTrim).violations).toEqual([]);
    // A job whose retention never trims has no trimmed history to refuse.
    expect(checkLinearizable(h, existing).violations).toHaveLength(1);
    // Refused after the job was deleted: it would have been JOB_NOT_FOUND.
    const gone = [op({ kind: 'delete', invokedAt: 0, answeredAt: 1, outcome: 'ok' }), op({ kind: 'backfill', invokedAt: 2, answeredAt: 3, ...trimmed })];
    expect(checkLinearizable(gone, existing, mayTrim).violations).toHaveLength(1);
    // The bug the horizon fixes: the trimmed run named again by a later backfill, under its own id.
    const again = [h[0]!, op({ kind: 'backfill', invokedAt: 2, answeredAt: 3, outcome: 'ok', runIds: ['j@b1'] })];
    expect(checkLinearizable(again, existing, mayTrim).violations).toHaveLength(1);
    // Other item errors of a backfill stay unjudged (left out).
    const other = [op({ kind: 'delete', invokedAt: 0, answeredAt: 1, outcome: 'ok' }), op({ kind: 'backfill', invokedAt: 2, answeredAt: 3, outcome: 'failed', errorCode: 'LIMIT_EXCEEDED' })];
    expect(checkLinearizable(other, existing, mayTrim).violations).toEqual([]);
  });

  it('lets a read see a run whose trigger is still unanswered only if the trigger answered ok later names it', () => {
    const h = [
      op({ kind: 'trigger', invokedAt: 0, answeredAt: 6, outcome: 'ok', runIds: ['j@m1'] }),
      op({ kind: 'list', invokedAt: 2, answeredAt: 3, outcome: 'ok', runs: [{ id: 'j@m1', state: RunState.RUN_STATE_PENDING }], client: 2 }),
    ];
    expect(checkLinearizable(h, existing).violations).toEqual([]);
    // Seen before the trigger was even sent: impossible.
    const early = [{ ...h[0]!, invokedAt: 4 }, h[1]!];
    expect(checkLinearizable(early, existing).violations).toHaveLength(1);
  });
});
