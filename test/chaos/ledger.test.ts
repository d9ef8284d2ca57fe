import { afterEach, describe, expect, it } from 'vitest';
import { startLedgerServer } from '../../chaos/ledger/ledger-server.js';
import type { LedgerSnapshot } from '../../chaos/ledger/ledger-state.js';

const rec = (runId: string, fencingToken: number, workerId = 'w1') => ({
  runId,
  jobId: runId.split('@')[0],
  slotMs: Number(runId.split('@')[1]),
  fencingToken,
  attempt: 1,
  workerId,
  startedMs: 1,
});

describe('chaos ledger', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it('applies the first effect per run, replays later ones, refuses stale tokens, and keeps invocations', async () => {
    const ledger = await startLedgerServer(0);
    close = ledger.close;
    const post = (path: string, body: unknown) =>
      fetch(`http://127.0.0.1:${ledger.port}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await post('/invoke', rec('j@1', 5))).toEqual({ status: 200, body: { ok: true } });
    expect(await post('/effect', rec('j@1', 5))).toEqual({ status: 200, body: { verdict: 'applied' } });
    expect(await post('/effect', rec('j@1', 9, 'w2'))).toEqual({ status: 200, body: { verdict: 'replay' } });
    expect(await post('/effect', rec('j@1', 7))).toEqual({ status: 409, body: { verdict: 'stale' } });
    expect((await post('/effect', { runId: 'x' })).status).toBe(400);
    const snap = (await (await fetch(`http://127.0.0.1:${ledger.port}/snapshot`)).json()) as LedgerSnapshot;
    expect(snap.invocations).toHaveLength(1);
    expect(snap.effects.map((e) => e.fencingToken)).toEqual([5]);
    expect(snap.replays.map((e) => e.fencingToken)).toEqual([9]);
    expect(snap.staleRejected.map((e) => e.fencingToken)).toEqual([7]);
  });
});

describe('chaos ledger: fencing by invocation, crash instructions', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it('an invocation with a newer token fences out an older holder that has not written yet', async () => {
    const ledger = await startLedgerServer(0);
    close = ledger.close;
    const post = (path: string, body: unknown) =>
      fetch(`http://127.0.0.1:${ledger.port}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    await post('/invoke', rec('j@2', 3));
    await post('/invoke', rec('j@2', 8, 'w2'));
    expect(await post('/effect', rec('j@2', 3))).toEqual({ status: 409, body: { verdict: 'stale' } });
    expect(await post('/effect', rec('j@2', 8, 'w2'))).toEqual({ status: 200, body: { verdict: 'applied' } });
  });

  it('delivers an armed crash instruction once, to the named worker or to anyone', async () => {
    const ledger = await startLedgerServer(0);
    close = ledger.close;
    const post = (path: string, body: unknown) =>
      fetch(`http://127.0.0.1:${ledger.port}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect((await post('/arm', { mode: 'sideways' })).status).toBe(400);
    await post('/arm', { mode: 'after-effect', workerId: 'w2' });
    expect((await post('/invoke', rec('j@3', 1, 'w1'))).body).toEqual({ ok: true });
    expect((await post('/invoke', rec('j@4', 1, 'w2'))).body).toEqual({ ok: true, crash: 'after-effect' });
    expect((await post('/invoke', rec('j@5', 1, 'w2'))).body).toEqual({ ok: true });
    await post('/arm', { mode: 'before-effect' });
    expect((await post('/disarm', {})).body).toEqual({ disarmed: 1 });
    expect((await post('/invoke', rec('j@6', 1, 'w1'))).body).toEqual({ ok: true });
  });
});
