// The short chaos run on kernel network faults (`--netns`) of `npm test`: 3 `herald server`
// processes and 3 workers, each in a network namespace of its own on a bridge, with no proxy in
// between; for 30 s the nemesis makes every kernel partition shape a 3-node cluster has — the
// leader's link down, a follower's link down, a majority/minority split and a one-way drop
// (nftables), a worker cut from the leader alone — then heals and checks. The checkers must be
// clean, and nothing the run made (processes, namespaces, bridge, nft table, temp dir) is left.
// Needs root, iproute2 and nft (installed with apt-get when missing); skipped with the reason.
import { execFileSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../chaos/run-chaos.js';
import { liveManaged } from '../../chaos/orchestrator/managed-process.js';
import { kernelFaultsUnavailable } from '../../chaos/net/netns.js';
import type { FaultKind } from '../../chaos/nemesis/fault-kinds.js';
import { CLEAN_CHECKERS } from './fixtures/clean-checkers.js';

const unavailable = await kernelFaultsUnavailable();
if (unavailable) console.warn(`chaos --netns run skipped: ${unavailable}`);
const SEED = 35;
// The schedule of seed 35 over 30 s deals each of these once.
const KINDS: FaultKind[] = ['partition-isolate-leader', 'partition-isolate-one', 'partition-majority-minority', 'partition-one-way', 'partition-worker-leader'];

const ownLabNames = () =>
  [execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }), execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }), execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' })]
    .join('\n')
    .split(/\s+/)
    .filter((w) => w.startsWith(`hx${process.pid.toString(36)}_`));

describe('chaos: short run on kernel network faults (3 nodes in network namespaces)', () => {
  it.skipIf(!!unavailable)(`silent partitions lose nothing, double nothing, stay linearizable and converge${unavailable ? ` (skipped: ${unavailable})` : ''}`, { timeout: 240_000 }, async () => {
    const lines: string[] = [];
    const r = await runChaos({ nodes: 3, durationMs: 30_000, families: ['partition'], kinds: KINDS, seed: SEED, netns: true, keep: 'never', log: (l) => lines.push(l) });
    const s = r.summary;
    const detail = `${r.human}\n${lines.join('\n')}`;
    expect(s, detail).toMatchObject({
      network: 'netns',
      ...CLEAN_CHECKERS,
      recovered: true,
      ok: true,
    });
    const applied = r.report.faultLog.filter((f) => f.applied);
    expect(new Set(applied.map((f) => f.kind)), detail).toEqual(new Set(KINDS));
    expect(s.slotsChecked, detail).toBeGreaterThan(100);
    expect(liveManaged()).toEqual([]);
    expect(ownLabNames()).toEqual([]);
    expect((await readdir(tmpdir())).filter((d) => d.startsWith(`herald-chaos-${SEED}-`))).toEqual([]);
  });
});
