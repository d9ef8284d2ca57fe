// `herald server --allocator`: with auto (the default) and jemalloc installed, the server
// re-executes itself as the same process with jemalloc preloaded; system keeps glibc's malloc; a
// jemalloc that cannot be had is a usage error with the reason. The plan itself is a pure function.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOCATOR_ENV, planAllocator, type AllocatorFacts } from '../../src/cli/server-allocator.js';
import { CliProcess, runCli } from './helpers/run-cli.js';
import { ensureJemalloc } from './helpers/jemalloc.js';
import { freePort } from '../../chaos/orchestrator/free-port.js';

const LIB = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
const facts = (o: Partial<AllocatorFacts> = {}): AllocatorFacts => ({ env: {}, platform: 'linux', exists: (p) => p === LIB, canExec: true, ...o });

describe('the allocator plan', () => {
  it('re-executes with jemalloc preloaded once, and stays put otherwise, saying why', () => {
    const plan = planAllocator('auto', facts({ env: { LD_PRELOAD: '/opt/other.so', PATH: '/bin' } }));
    expect(plan).toEqual({ kind: 'exec', library: LIB, env: { LD_PRELOAD: `${LIB}:/opt/other.so`, PATH: '/bin', [ALLOCATOR_ENV]: 'jemalloc' } });
    // The re-executed process does not loop.
    expect(planAllocator('auto', facts({ env: { [ALLOCATOR_ENV]: 'jemalloc' } }))).toMatchObject({ kind: 'stay', allocator: 'jemalloc' });
    expect(planAllocator('system', facts())).toMatchObject({ kind: 'stay', allocator: 'system' });
    expect(planAllocator('auto', facts({ env: { LD_PRELOAD: '/usr/local/lib/libjemalloc.so.2' } }))).toMatchObject({ kind: 'stay', allocator: 'jemalloc' });
    expect(planAllocator('auto', facts({ exists: () => false }))).toMatchObject({ kind: 'stay', allocator: 'system', why: expect.stringMatching(/apt-get install libjemalloc2/) });
    expect(planAllocator('auto', facts({ platform: 'darwin' }))).toMatchObject({ kind: 'stay', allocator: 'system' });
    expect(planAllocator('auto', facts({ canExec: false }))).toMatchObject({ kind: 'stay', allocator: 'system', why: expect.stringMatching(/execve/) });
    expect(planAllocator('jemalloc', facts({ exists: () => false }))).toMatchObject({ kind: 'refuse', message: expect.stringMatching(/^--allocator jemalloc: libjemalloc.so.2 not installed/) });
    expect(planAllocator('tcmalloc', facts())).toMatchObject({ kind: 'refuse', message: expect.stringMatching(/auto, jemalloc or system/) });
  });
});

describe('herald server --allocator (real processes)', () => {
  let dir: string;
  beforeAll(async () => {
    ensureJemalloc();
    dir = await mkdtemp(join(tmpdir(), 'herald-allocator-'));
  }, 300_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (name: string, extra: string[]) => {
    const peer = await freePort();
    const client = await freePort();
    const p = new CliProcess(['server', '--id', 'n1', '--peers', `n1=127.0.0.1:${peer}/127.0.0.1:${client}`, '--data-dir', join(dir, name), '--insecure', '--log-level', 'info', ...extra]);
    try {
      const m = await p.waitFor(/"msg":"memory allocator: (\w+)"/, 20_000, 'stderr'); // logs are JSON on stderr
      await p.waitFor(/node started/, 20_000, 'stderr');
      const maps = readFileSync(`/proc/${p.proc.pid}/maps`, 'utf8');
      return { allocator: m[1], jemallocMapped: maps.includes('libjemalloc'), pid: p.proc.pid };
    } finally {
      await p.stop();
    }
  };

  it('auto: the same process, re-executed with jemalloc mapped', async () => {
    expect(await start('auto', [])).toMatchObject({ allocator: 'jemalloc', jemallocMapped: true });
  }, 60_000);

  it('system: glibc malloc, jemalloc not mapped', async () => {
    expect(await start('system', ['--allocator', 'system'])).toMatchObject({ allocator: 'system', jemallocMapped: false });
  }, 60_000);

  it('a bad choice is a usage error naming the choices', async () => {
    const r = await runCli(['server', '--id', 'n1', '--peers', 'n1=127.0.0.1:1', '--data-dir', join(dir, 'bad'), '--insecure', '--allocator', 'tcmalloc']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--allocator must be auto, jemalloc or system \(got "tcmalloc"\)/);
  });
});
