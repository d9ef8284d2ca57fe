// Randomised scenarios against the fake worker server: assignments within credits, handlers
// finishing, cancels, lease losses and dropped streams in a seeded random order. Checks the
// worker's promises (the headers of src/client/worker/, listed in worker.ts) rather than any one script.
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Worker } from '../../src/client/worker/worker.js';
import { FakeWorkerServer } from './fakes/fake-worker-server.js';
import { waitFor } from './fakes/grpc-test-server.js';

type Step = 'assign' | 'finish' | 'cancel' | 'leaseLost' | 'drop';

interface ModelRun {
  token: number;
  state: 'assigned' | 'finished' | 'killed' | 'gone';
}

const CONCURRENCY = 3;
let cleanup: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function scenario(steps: Step[], picks: number[]): Promise<void> {
  const s = await FakeWorkerServer.start();
  const gates = new Map<string, () => void>();
  const gatePromises = new Map<string, Promise<void>>();
  const gateOf = (id: string): Promise<void> => {
    let p = gatePromises.get(id);
    if (!p) {
      p = new Promise<void>((r) => gates.set(id, r));
      gatePromises.set(id, p);
    }
    return p;
  };
  let inFlight = 0;
  let peak = 0;
  const w = new Worker({
    endpoints: [s.address],
    workerId: 'w-random',
    concurrency: CONCURRENCY,
    heartbeatIntervalMs: 20,
    reconnect: { initialBackoffMs: 5, maxBackoffMs: 20 },
    handlers: {
      work: async (ctx) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        try {
          await Promise.race([
            gateOf(ctx.run.id),
            new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true })),
          ]);
        } finally {
          inFlight -= 1;
        }
        if (ctx.signal.aborted) throw ctx.signal.reason;
        return ctx.run.id;
      },
    },
  });
  cleanup.push(async () => {
    for (const open of gates.values()) open();
    await w.shutdown({ graceMs: 0 });
    await s.stop();
  });
  w.start();
  await s.waitForConn(1);

  const model = new Map<string, ModelRun>();
  const reportingAtHello = new Map<object, number>();
  let next = 0;
  let pick = 0;
  const choose = <T>(items: T[]): T | undefined => (items.length === 0 ? undefined : items[picks[pick++ % picks.length]! % items.length]);
  const liveRuns = (): string[] => [...model].filter(([, r]) => r.state === 'assigned').map(([id]) => id);

  for (const step of steps) {
    const conn = s.conn;
    switch (step) {
      case 'assign':
        if (conn.outstanding > 0 && !conn.ended) {
          const id = `r${next++}`;
          const a = conn.assign({ runId: id });
          model.set(id, { token: a.fencingToken, state: 'assigned' });
        }
        break;
      case 'finish': {
        const id = choose(liveRuns());
        if (id) {
          model.get(id)!.state = 'finished';
          void gateOf(id);
          gates.get(id)!();
        }
        break;
      }
      case 'cancel':
      case 'leaseLost': {
        const id = choose(liveRuns());
        if (id && !conn.ended) {
          model.get(id)!.state = 'killed';
          if (step === 'cancel') conn.cancel(id, model.get(id)!.token);
          else conn.leaseLost(id, model.get(id)!.token);
        }
        break;
      }
      case 'drop': {
        const count = s.conns.length;
        conn.drop();
        const fresh = await s.waitForConn(count + 1);
        // Runs whose assignment died with the stream were never the worker's: the server
        // would expire them. Everything the worker still holds is re-attached.
        const held = new Set(fresh.hello!.heldRuns.map((r) => r.runId));
        for (const [id, r] of model) {
          const reported = s.results.some((res) => res.runId === id);
          if ((r.state === 'assigned' || r.state === 'finished') && !held.has(id) && !reported) r.state = 'gone';
        }
        expect(fresh.hello!.capacity).toBeLessThanOrEqual(CONCURRENCY);
        // A finished run whose ack died with the stream is re-attached (its lease must be kept
        // until the result lands) but occupies no execution slot: the fake counts it as
        // committed until the re-sent result arrives.
        reportingAtHello.set(fresh, fresh.hello!.heldRuns.filter((r) => model.get(r.runId)?.state === 'finished').length);
        break;
      }
    }
    await new Promise((r) => setTimeout(r, 2));
  }

  // Let everything still running finish, then every finished run must be reported exactly
  // with its token, and no killed run may ever be reported.
  for (const [id, r] of model) {
    if (r.state === 'assigned') {
      r.state = 'finished';
      void gateOf(id);
      gates.get(id)!();
    }
  }
  const finished = [...model].filter(([, r]) => r.state === 'finished');
  await waitFor(
    () => finished.every(([id, r]) => s.results.some((res) => res.runId === id && res.fencingToken === r.token)),
    'a result for every finished run',
    10_000,
  );
  await waitFor(() => w.heldRuns.length === 0 && w.activeRuns === 0, 'worker idle after acks', 10_000);
  const killed = new Set([...model].filter(([, r]) => r.state === 'killed').map(([id]) => id));
  expect(s.results.filter((res) => killed.has(res.runId))).toEqual([]);
  for (const res of s.results) expect(res.outcome?.$case).toBe('success');
  expect(peak).toBeLessThanOrEqual(CONCURRENCY);
  for (const c of s.conns) expect(c.peakCommitment).toBeLessThanOrEqual(CONCURRENCY + (reportingAtHello.get(c) ?? 0));
}

describe('Worker under random event orders', () => {
  it('keeps concurrency, never reports killed runs, and reports every finished run', async () => {
    const step = fc.constantFrom<Step>('assign', 'assign', 'assign', 'finish', 'finish', 'cancel', 'leaseLost', 'drop');
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 40 }), fc.array(fc.nat(1000), { minLength: 1, maxLength: 20 }), async (steps, picks) => {
        try {
          await scenario(steps, picks);
        } finally {
          for (const c of cleanup.reverse()) await c();
          cleanup = [];
        }
      }),
      { numRuns: 8, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}) },
    );
  }, 60_000);
});
