// Bad input never reaches a cluster: the CLI answers with exit code 2 and one line on stderr
// naming the problem. An unreachable cluster is exit 5. These run the built CLI as a subprocess.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freeBasePort, runCli, type CliResult } from './helpers/run-cli.js';

function expectOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trimEnd().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

describe('herald CLI: bad input', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['missing task type', ['job', 'create', '--every', '5s'], /^herald job create: INVALID_ARGUMENT: --task-type is required/],
    ['missing schedule', ['job', 'create', '--task-type', 'demo'], /a schedule is required/],
    ['bad cron', ['job', 'create', '--task-type', 'demo', '--cron', '* * *'], /cron: "\* \* \*" has 3 fields/],
    ['unknown time zone', ['job', 'create', '--task-type', 'demo', '--cron', '0 2 * * *', '--tz', 'Mars/Olympus'], /unknown time zone "Mars\/Olympus"/],
    ['tz without cron', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--tz', 'UTC'], /--tz only applies to --cron/],
    ['two schedules', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--cron', '* * * * *'], /--cron and --every cannot be combined/],
    ['bad duration', ['job', 'create', '--task-type', 'demo', '--every', '5 minutes'], /every: invalid duration "5 minutes"/],
    ['bad payload JSON', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--payload', '{nope'], /--payload: not valid JSON/],
    ['missing payload file', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--payload', '@/nonexistent/x.json'], /--payload: cannot read/],
    ['bad instant', ['job', 'create', '--task-type', 'demo', '--at', 'tomorrow-ish'], /--at: "tomorrow-ish" is not an instant/],
    ['bad overlap', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--overlap', 'sometimes'], /--overlap: unknown value "sometimes"/],
    ['bad label', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--label', 'novalue'], /--label: "novalue" is not key=value/],
    ['bad priority', ['job', 'create', '--task-type', 'demo', '--every', '5s', '--priority', '5000'], /priority: expected a whole number in -1000..1000/],
    ['bad endpoints', ['job', 'ls', '--endpoints', 'localhost'], /--endpoints: "localhost" is not host:port/],
    ['bad run state', ['run', 'ls', '--state', 'sleeping'], /--state: unknown state "sleeping"/],
    ['bad watch state', ['run', 'watch', '--state', 'failed,sleeping'], /^herald run watch: INVALID_ARGUMENT: --state: unknown state "sleeping"/],
    ['bad watch index', ['run', 'watch', '--from-index', '-3'], /--from-index: expected an applied index/],
    ['unknown option', ['job', 'ls', '--bogus'], /^herald: usage: unknown option '--bogus'/],
    ['missing argument', ['job', 'get'], /^herald: usage: missing required argument 'id'/],
    ['update without changes', ['job', 'update', 'x'], /nothing to change/],
    ['worker concurrency', ['worker', '--concurrency', '0'], /--concurrency: expected a whole number/],
    ['dev base port', ['dev', '--base-port', '80'], /--base-port: expected a port/],
    ['dev node count', ['dev', '--nodes', '4'], /--nodes: expected 3 or 5, got "4"/],
    ['plaintext HTTP port on a network', ['server', '--id', 'n1', '--peers', 'n1=127.0.0.1:1', '--insecure', '--http-addr', '0.0.0.0:0'], /--http-addr 0\.0\.0\.0:0: the HTTP port is plaintext/],
  ];

  it('exits 2 with one line on stderr and nothing on stdout', { timeout: 120_000 }, async () => {
    // A few at a time: a loaded 2-core CI machine starves 20 simultaneous Node processes.
    const results: CliResult[] = [];
    for (let i = 0; i < cases.length; i += 4) {
      results.push(...(await Promise.all(cases.slice(i, i + 4).map(([, args]) => runCli(args, { timeoutMs: 60_000 })))));
    }
    results.forEach((r, i) => {
      const [name, , pattern] = cases[i]!;
      expect(r.code, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stdout, name).toBe('');
      expectOneLine(r.stderr, pattern);
    });
  });

  it('--json errors are one JSON object on stderr', async () => {
    const r = await runCli(['job', 'create', '--task-type', 'demo', '--cron', 'bad', '--json']);
    expect(r.code).toBe(2);
    const err = JSON.parse(r.stderr) as { error: { code: string; message: string; exitCode: number; command: string } };
    expect(err.error).toMatchObject({ code: 'INVALID_ARGUMENT', exitCode: 2, command: 'job create' });
    expect(err.error.message).toMatch(/cron/);
  });

  it('an unreachable cluster is exit 5 (unavailable) within --timeout', async () => {
    const base = await freeBasePort();
    const started = Date.now();
    const r = await runCli(['job', 'ls', '--endpoints', `127.0.0.1:${base + 1}`, '--timeout', '1500ms']);
    expect(r.code, r.stderr).toBe(5);
    expectOneLine(r.stderr, /^herald job ls: (UNAVAILABLE|DEADLINE_EXCEEDED): .*cannot reach|^herald job ls: (UNAVAILABLE|DEADLINE_EXCEEDED)/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('HERALD_ENDPOINTS is used when --endpoints is absent', async () => {
    const r = await runCli(['cluster', 'status'], { env: { HERALD_ENDPOINTS: 'not an endpoint' } });
    expect(r.code).toBe(2);
    expectOneLine(r.stderr, /HERALD_ENDPOINTS: "not an endpoint" is not host:port/);
  });

  it('herald dev refuses ports in use, before starting any node', async () => {
    const base = await freeBasePort();
    const dir = await mkdtemp(join(tmpdir(), 'herald-cli-ports-'));
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(base + 12, '127.0.0.1', () => resolve()));
    try {
      const r = await runCli(['dev', '--data-dir', dir, '--base-port', String(base)], { timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(2);
      expectOneLine(r.stderr, new RegExp(`^herald dev: INVALID_ARGUMENT: port ${base + 12} \\(n2 peer\\) in use`));
      // Same data dir, another base port: refused, since the nodes' identity holds their addresses.
      const other = await runCli(['dev', '--data-dir', dir, '--base-port', String(base + 100)], { timeoutMs: 60_000 });
      expect(other.code, other.stderr + other.stdout).toBe(2);
      expectOneLine(other.stderr, new RegExp(`created with --base-port ${base}; use that port`));
    } finally {
      blocker.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('without --endpoints or HERALD_ENDPOINTS, the CLI finds the dev cluster of ./.herald', async () => {
    const base = await freeBasePort();
    const dir = await mkdtemp(join(tmpdir(), 'herald-cli-cwd-'));
    try {
      await mkdir(join(dir, '.herald'));
      await writeFile(join(dir, '.herald', 'dev.json'), JSON.stringify({ basePort: base }));
      const env = { HERALD_ENDPOINTS: '' };
      const r = await runCli(['job', 'ls', '--timeout', '1s'], { cwd: dir, env });
      expect(r.code, r.stderr).toBe(5);
      expect(r.stderr).toMatch(new RegExp(`127\\.0\\.0\\.1:${base + 1}|127\\.0\\.0\\.1:${base + 2}|127\\.0\\.0\\.1:${base + 3}`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--help exits 0', async () => {
    const r = await runCli(['job', 'create', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--task-type/);
    expect(r.stdout).toMatch(/--idempotency-key/);
  });
});
