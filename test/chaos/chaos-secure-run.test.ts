// The short chaos run with TLS and auth on (issue 29, `npm run chaos -- --secure`): 3 `herald
// server` processes serving TLS on the client port and mutual TLS on the peer port (certificates
// made as `herald dev` makes them), auth on; the workload writes with an operator token, the
// checkers read run histories with a viewer token, the workers (one rogue) hold a worker token for
// the chaos task type, and the orchestrator's status reads a viewer certificate. A shorter fault
// phase than chaos-run.test.ts's, with a leader kill, a leader partition and a worker kill in its
// deck. The checkers must be as clean as without security.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../chaos/run-chaos.js';
import { liveManaged } from '../../chaos/orchestrator/managed-process.js';
import type { FaultKind } from '../../chaos/nemesis/fault-kinds.js';
import { CLEAN_CHECKERS } from './fixtures/clean-checkers.js';

const SEED = 29;
const KINDS: FaultKind[] = ['kill-leader', 'partition-isolate-leader', 'kill-worker'];

describe('chaos: short real run with TLS and auth (3 nodes)', () => {
  it('loses nothing, doubles nothing, stays linearizable and converges with every call authenticated', { timeout: 240_000 }, async () => {
    expect(existsSync(join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'main.js'))).toBe(true);
    const lines: string[] = [];
    const r = await runChaos({
      nodes: 3,
      durationMs: 20_000,
      families: ['kill', 'partition'],
      kinds: KINDS,
      seed: SEED,
      secure: true,
      rogueWorkers: 1,
      keep: 'never',
      log: (l) => lines.push(l),
    });
    const s = r.summary;
    const detail = `${r.human}\n${lines.join('\n')}`;
    expect(s, detail).toMatchObject({
      seed: SEED,
      nodes: 3,
      secure: true,
      ...CLEAN_CHECKERS,
      recovered: true,
      ok: true,
    });
    // Auth was on: a call without a token and a viewer's write were refused.
    expect(r.report.authProbe, detail).toEqual({ noToken: 'UNAUTHENTICATED', viewerWrite: 'PERMISSION_DENIED' });
    const applied = r.report.faultLog.filter((f) => f.applied).map((f) => f.kind);
    expect(applied, detail).toContain('kill-leader');
    expect(s.slotsChecked, detail).toBeGreaterThan(50);
    expect(s.operations, detail).toBeGreaterThan(100);
    // The token-bound workers executed the runs (the ledger saw them).
    expect(r.report.checks.fencing.invocations, detail).toBeGreaterThan(50);
    expect(lines.join('\n')).toContain('secure (TLS, mTLS peers, auth) cluster of 3 up');
    expect(liveManaged()).toEqual([]);
    expect((await readdir(tmpdir())).filter((d) => d.startsWith(`herald-chaos-${SEED}-`))).toEqual([]);
  });
});
