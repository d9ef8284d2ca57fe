// The `npm run sim` contract: the last stdout line is the JSON summary; --seed --trace replays.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALL_MUTATIONS } from '../../src/raft/core/mutations.js';
import { ALL_DRIVER_MUTATIONS } from '../../src/raft/driver/mutations.js';
import { runSimulation } from '../../src/raft/sim/simulator.js';

const root = join(import.meta.dirname, '..', '..');

function sim(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'src/raft/sim/cli.ts', ...args], { cwd: root, encoding: 'utf8' });
}

describe('sim CLI', () => {
  it('prints a JSON summary as its last line', () => {
    const res = sim('--seeds', '3', '--start-seed', '11', '--nodes', '3');
    expect(res.status).toBe(0);
    const last = res.stdout.trim().split('\n').pop()!;
    const summary = JSON.parse(last);
    expect(summary).toMatchObject({ seeds: 3, violations: 0, failingSeeds: [] });
    expect(summary.steps).toBeGreaterThan(0);
    expect(summary.seedsPerSecond).toBeGreaterThan(0);
    expect(summary).toHaveProperty('crashes');
    expect(summary).toHaveProperty('ioErrors');
    expect(Object.keys(summary.options).sort()).toEqual(['applyWindow', 'compactionKeepZero', 'effects', 'ioErrorsOn', 'snapshotByBytes', 'writeBehind']);
  });

  it('lists every core and driver mutation, one a line', () => {
    const res = sim('--list-mutations');
    expect(res.status).toBe(0);
    expect(res.stdout.trim().split('\n')).toEqual([...ALL_MUTATIONS, ...ALL_DRIVER_MUTATIONS]);
  });

  it('replays one seed with the same trace the library produces', async () => {
    const res = sim('--seed', '4', '--nodes', '3', '--trace');
    expect(res.status).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines[0]).toContain('# seed 4, 3 nodes');
    const inProcess = await runSimulation({ seed: 4, nodes: 3, trace: true });
    expect(lines.slice(1, -1)).toEqual(inProcess.trace);
    expect(JSON.parse(lines[lines.length - 1]!)).toMatchObject({ seed: 4, steps: inProcess.steps, violations: [] });
  });

  it('exits non-zero and lists the failing seeds when a mutation is caught', () => {
    const res = sim('--seeds', '8', '--nodes', '3', '--mutation', 'apply-effects-at-wrong-index');
    expect(res.status).toBe(1);
    const summary = JSON.parse(res.stdout.trim().split('\n').pop()!);
    expect(summary.violations).toBeGreaterThan(0);
    expect(summary.failingSeeds[0]).toMatchObject({ nodes: 3 });
  });
});
