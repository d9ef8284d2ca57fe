// The CLI against a real local cluster started the way users start it: `herald dev` (3 server
// processes + the in-process demo worker) on a temp data dir and free ports. Covers create → list
// → trigger → the demo worker runs it → succeeded, the exec worker, conflicts and not-found exit
// codes, cluster status/transfer, and that SIGTERM leaves no process behind.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcess, freeBasePort, runCli, type CliResult } from './helpers/run-cli.js';
import { killPids, pidsWithArg } from './helpers/processes.js';

let dir = '';
let dev: CliProcess | undefined;
let endpoints = '';

async function cli(...args: string[]): Promise<CliResult> {
  return runCli([...args, '--endpoints', endpoints], { timeoutMs: 60_000 });
}

async function cliJson<T>(...args: string[]): Promise<T> {
  const r = await cli(...args, '--json');
  expect(r.code, `herald ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}

interface JobJson {
  id: string;
  state: string;
  version: number;
  created?: boolean;
  spec: { taskType: string; payload: string; labels: Record<string, string>; schedule: Record<string, unknown> };
}
interface RunJson {
  id: string;
  jobId: string;
  state: string;
  workerId: string;
  manual: boolean;
  backfilled: boolean;
  output: string | null;
  attempts: Array<{ outcome: string; error: { type: string; message: string } | null }>;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-cli-dev-'));
  const base = await freeBasePort();
  endpoints = [1, 2, 3].map((i) => `127.0.0.1:${base + i}`).join(',');
  dev = new CliProcess(['dev', '--data-dir', join(dir, 'data'), '--base-port', String(base), '--no-demo', '--log-level', 'warn']);
  // The banner ends with how to stop; waiting for it means the whole banner is in.
  await dev.waitFor(/Ctrl-C stops everything/, 60_000);
  // The dev cluster runs TLS with a CA it made in its data dir; every CLI process below trusts it.
  process.env.HERALD_CA = join(dir, 'data', 'certs', 'ca.crt');
  // It runs with auth too; its admin token is in the same directory.
  process.env.HERALD_TOKEN = readFileSync(join(dir, 'data', 'certs', 'admin.token'), 'utf8').trim();
}, 90_000);

afterAll(async () => {
  await dev?.stop('SIGKILL').catch(() => undefined);
  // Whatever a failed test left behind (nodes, workers) carries the temp dir or its ports.
  killPids(pidsWithArg(dir));
  if (endpoints) killPids(pidsWithArg(endpoints));
  await rm(dir, { recursive: true, force: true });
}, 30_000);

describe('herald CLI against `herald dev`', () => {
  it('prints where to connect', () => {
    expect(dev!.stdout).toContain(`client endpoints  ${endpoints}`);
    expect(dev!.stdout).toContain(`TLS CA            ${process.env.HERALD_CA}`);
    expect(dev!.stdout).toMatch(/metrics\s+http:\/\/127\.0\.0\.1:\d+\/metrics/);
    expect(dev!.stdout).toMatch(/demo worker\s+task type "demo"/);
    expect(dev!.stdout).toMatch(/dashboard\s+http:\/\/127\.0\.0\.1:\d+\//);
  });

  it('cluster status shows 3 members and a leader, as a table and as JSON', async () => {
    const st = await cliJson<{ leaderId: string; members: Array<{ id: string; role: string; reachable: boolean; healthy: boolean }> }>('cluster', 'status');
    expect(st.members.map((m) => m.id).sort()).toEqual(['n1', 'n2', 'n3']);
    expect(st.members.filter((m) => m.role === 'leader').map((m) => m.id)).toEqual([st.leaderId]);
    expect(st.members.every((m) => m.reachable)).toBe(true);
    expect(st.members.map((m) => (m as { member?: string }).member)).toEqual(['voter', 'voter', 'voter']);
    const table = await cli('cluster', 'status');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+MEMBER\s+ROLE\s+TERM\s+COMMIT\s+APPLIED\s+MATCH\s+LAST CONTACT\s+HEALTH/m);
    expect(table.stdout.match(/^n\d\*?\s/gm)).toHaveLength(3);
    expect(table.stdout).toMatch(new RegExp(`^${st.leaderId}\\*\\s+voter\\s+leader`, 'm'));
  });

  it('creates, lists, triggers a job; the demo worker runs it to success', async () => {
    const job = await cliJson<JobJson>(
      'job', 'create', '--id', 'cli-job', '--task-type', 'demo', '--every', '1h', '--payload', '{"n":1}', '--label', 'team=cli', '--max-attempts', '3',
    );
    expect(job).toMatchObject({ id: 'cli-job', state: 'active', created: true, spec: { taskType: 'demo', payload: '{"n":1}', labels: { team: 'cli' } } });
    expect(job.spec.schedule).toEqual({ every: { intervalMs: 3_600_000, anchorUnixMs: 0 } });

    const again = await cli('job', 'create', '--id', 'cli-job', '--task-type', 'demo', '--every', '1h');
    expect(again.code, again.stderr).toBe(4);
    expect(again.stderr).toMatch(/^herald job create: ALREADY_EXISTS: /);

    const ls = await cliJson<{ jobs: JobJson[] }>('job', 'ls', '--label', 'team=cli');
    expect(ls.jobs.map((j) => j.id)).toEqual(['cli-job']);
    // An id prefix lists that id range only.
    expect((await cliJson<{ jobs: JobJson[] }>('job', 'ls', '--prefix', 'cli-')).jobs.map((j) => j.id)).toEqual(['cli-job']);
    expect((await cliJson<{ jobs: JobJson[] }>('job', 'ls', '--prefix', 'cli-jobs')).jobs).toEqual([]);
    const table = await cli('job', 'ls');
    expect(table.stdout).toMatch(/^ID\s+TASK TYPE\s+SCHEDULE\s+STATE/m);
    expect(table.stdout).toMatch(/^cli-job\s+demo\s+every 1h\s+active/m);

    const run = await cliJson<RunJson>('job', 'trigger', 'cli-job', '--wait', '--wait-timeout', '30s');
    expect(run).toMatchObject({ jobId: 'cli-job', state: 'succeeded', manual: true });
    // Bound to its credential: the demo worker runs with the dev admin token.
    expect(run.workerId).toMatch(/^bootstrap-admin:dev-worker-/);
    // dev streamed the fire as the demo worker received it.
    await dev!.waitFor(new RegExp(`fire .*run ${run.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+job cli-job \\(manual\\)`), 10_000);

    const runs = await cliJson<{ runs: RunJson[] }>('run', 'ls', '--job', 'cli-job');
    // An interval job may also have fired its first slot by now; the manual run is the one we made.
    expect(runs.runs.filter((r) => r.manual).map((r) => [r.id, r.state])).toEqual([[run.id, 'succeeded']]);
    expect(runs.runs.every((r) => r.jobId === 'cli-job')).toBe(true);
    const got = await cli('run', 'get', run.id);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/^state:\s+succeeded/m);
    expect(got.stdout).toMatch(/^#\s+WORKER\s+TOKEN/m);
  });

  it('update bumps the version; a stale --expected-version is a conflict (exit 4)', async () => {
    await cliJson<JobJson>('job', 'create', '--id', 'cli-upd', '--task-type', 'demo', '--cron', '0 2 * * *', '--tz', 'Europe/Berlin');
    const before = await cliJson<JobJson>('job', 'get', 'cli-upd');
    const after = await cliJson<JobJson>('job', 'update', 'cli-upd', '--every', '2h', '--label', 'x=y');
    expect(after.version).toBeGreaterThan(before.version);
    expect(after.spec.schedule).toEqual({ every: { intervalMs: 7_200_000, anchorUnixMs: 0 } });
    expect(after.spec.labels).toEqual({ x: 'y' });
    const stale = await cli('job', 'update', 'cli-upd', '--priority', '5', '--expected-version', String(before.version));
    expect(stale.code, stale.stderr).toBe(4);
    expect(stale.stderr).toMatch(/^herald job update: FAILED_PRECONDITION: /);

    const paused = await cliJson<JobJson>('job', 'pause', 'cli-upd', '--note', 'maintenance');
    expect(paused.state).toBe('paused');
    const resumed = await cliJson<JobJson>('job', 'resume', 'cli-upd');
    expect(resumed.state).toBe('active');

    const rm = await cli('job', 'rm', 'cli-upd');
    expect(rm.code, rm.stderr).toBe(0);
    const gone = await cli('job', 'get', 'cli-upd');
    expect(gone.code).toBe(3);
    expect(gone.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(gone.stderr).toMatch(/^herald job get: NOT_FOUND: /);
  });

  it('backfill creates runs for past slots (over --max-runs is exit 6); run cancel cancels a pending run', async () => {
    // No worker takes task type "idle", so its runs stay pending.
    await cliJson<JobJson>('job', 'create', '--id', 'cli-idle', '--task-type', 'idle', '--cron', '* * * * *');
    const bf = await cliJson<{ runIds: string[] }>('job', 'backfill', 'cli-idle', '--from', '5m ago', '--max-runs', '10');
    expect(bf.runIds.length).toBeGreaterThanOrEqual(4);
    expect(bf.runIds.length).toBeLessThanOrEqual(5);
    const tooMany = await cli('job', 'backfill', 'cli-idle', '--from', '30m ago', '--to', '10m ago', '--max-runs', '2');
    expect(tooMany.code, tooMany.stderr).toBe(6);
    expect(tooMany.stderr).toMatch(/^herald job backfill: RESOURCE_EXHAUSTED: /);

    const pending = await cliJson<{ runs: RunJson[] }>('run', 'ls', '--job', 'cli-idle', '--state', 'pending');
    expect(pending.runs.filter((r) => r.backfilled).map((r) => r.id).sort()).toEqual([...bf.runIds].sort());
    const cancelled = await cliJson<RunJson>('run', 'cancel', bf.runIds[0]!, '--reason', 'not needed');
    expect(cancelled.state).toBe('cancelled');
    const again = await cli('run', 'cancel', bf.runIds[0]!);
    expect(again.code, again.stderr).toBe(4);
    const missing = await cli('run', 'get', 'cli-idle@1');
    expect(missing.code, missing.stderr).toBe(3);
  });

  it('trigger honours a FORBID job\'s overlap policy (exit 4 naming the active run); --ignore-overlap runs anyway', async () => {
    // No worker serves "idle": the first manual run stays active.
    await cliJson<JobJson>('job', 'create', '--id', 'cli-forbid', '--task-type', 'idle', '--every', '1h', '--start', '+1h', '--overlap', 'forbid');
    const first = await cliJson<RunJson>('job', 'trigger', 'cli-forbid');
    expect(first.state).toBe('pending');
    const refused = await cli('job', 'trigger', 'cli-forbid');
    expect(refused.code, refused.stderr).toBe(4);
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/^herald job trigger: FAILED_PRECONDITION: /);
    expect(refused.stderr).toContain(`run ${first.id} is still active`);
    expect(refused.stderr).toContain('ignore_overlap');
    const forced = await cliJson<RunJson>('job', 'trigger', 'cli-forbid', '--ignore-overlap');
    expect(forced).toMatchObject({ state: 'pending', manual: true });
    expect(forced.id).not.toBe(first.id);
    const pending = await cliJson<{ runs: RunJson[] }>('run', 'ls', '--job', 'cli-forbid', '--state', 'pending');
    expect(pending.runs.map((r) => r.id).sort()).toEqual([first.id, forced.id].sort());
  });

  it('server-side validation errors are exit 2 in one line', async () => {
    const r = await cli('job', 'create', '--task-type', 'demo', '--cron', '99 * * * *');
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^herald job create: INVALID_ARGUMENT: /);
  });

  it('`herald worker --exec` runs a shell command per run with the run in its environment; non-zero exit fails the run', async () => {
    const worker = new CliProcess([
      'worker', '--endpoints', endpoints, '--task-type', 'shell', '--task-type', 'shellfail', '--concurrency', '2',
      '--exec', 'if [ "$HERALD_TASK_TYPE" = shellfail ]; then echo broken >&2; exit 3; fi; echo "ok $HERALD_RUN_ID $HERALD_JOB_ID $HERALD_ATTEMPT $HERALD_FENCING_TOKEN $HERALD_PAYLOAD"',
    ]);
    try {
      await worker.waitFor(/connected to n\d/, 30_000, 'stderr');
      await cliJson<JobJson>('job', 'create', '--id', 'cli-shell', '--task-type', 'shell', '--every', '1h', '--payload', '{"k":"v"}');
      const ok = await cliJson<RunJson>('job', 'trigger', 'cli-shell', '--wait', '--wait-timeout', '30s');
      expect(ok.state).toBe('succeeded');
      expect(ok.output).toMatch(new RegExp(`^ok ${ok.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cli-shell 1 \\d+ \\{"k":"v"\\}`));

      await cliJson<JobJson>('job', 'create', '--id', 'cli-fail', '--task-type', 'shellfail', '--every', '1h', '--max-attempts', '1');
      const bad = await cli('job', 'trigger', 'cli-fail', '--wait', '--wait-timeout', '30s', '--json');
      expect(bad.code, bad.stderr).toBe(7);
      const failed = JSON.parse(bad.stdout) as RunJson;
      expect(failed.state).toBe('dead');
      expect(failed.attempts[0]!.error?.message).toMatch(/exited with code 3: broken/);
    } finally {
      const exit = await worker.stop('SIGTERM');
      expect(exit.code, worker.stderr).toBe(0);
      expect(worker.stderr).toMatch(/stopped/);
    }
  });

  it('`herald worker`: the first SIGTERM drains (the running command goes on), a second one forces', async () => {
    const marker = `herald-cli-slow-${process.pid}`;
    const worker = new CliProcess(['worker', '--endpoints', endpoints, '--task-type', 'slow', '--verbose', '--exec', `sleep 30 # ${marker}`]);
    try {
      await worker.waitFor(/connected to n\d/, 30_000, 'stderr');
      await cliJson<JobJson>('job', 'create', '--id', 'cli-slow', '--task-type', 'slow', '--every', '1h', '--start', '+1h');
      const run = await cliJson<RunJson>('job', 'trigger', 'cli-slow');
      await worker.waitFor(new RegExp(`run ${run.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 30_000);
      worker.proc.kill('SIGTERM');
      await worker.waitFor(/draining/, 10_000, 'stderr');
      await new Promise((r) => setTimeout(r, 1_000));
      expect(worker.running).toBe(true); // still waiting for the in-flight run
      expect(pidsWithArg(marker).length).toBeGreaterThan(0);
      worker.proc.kill('SIGTERM');
      const exit = await worker.stop('SIGTERM', 20_000);
      expect(exit.code, worker.stderr).toBe(0);
      expect(pidsWithArg(marker)).toEqual([]); // the command's process group was killed too
    } finally {
      await worker.stop('SIGKILL');
      killPids(pidsWithArg(marker));
    }
  });

  it('task-type set | ls | get | rm: limits and default alerts round-trip; not found and bad flags exit with their codes', async () => {
    const set = await cliJson<{ taskType: string; maxRunning: number; ratePerSecond: number; burst: number; alerts: { onDead: string }; pauseAfterDead: number }>(
      'task-type', 'set', 'cli-report', '--max-running', '3', '--rate', '5/s', '--burst', '7', '--alert-on-dead', 'alerts', '--pause-after-dead', '4',
    );
    expect(set).toMatchObject({ taskType: 'cli-report', maxRunning: 3, ratePerSecond: 5, burst: 7, alerts: { onDead: 'alerts' }, pauseAfterDead: 4 });
    const table = await cli('task-type', 'ls');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^TASK TYPE\s+MAX RUNNING\s+RATE\s+BURST\s+ALERTS\s+PAUSE AFTER DEAD\s+UPDATED/m);
    expect(table.stdout).toMatch(/^cli-report\s+3\s+5\/s\s+7\s+dead→alerts\s+4\s/m);
    const got = await cli('task-type', 'get', 'cli-report');
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(/^max running:\s+3$/m);
    expect(got.stdout).toMatch(/^alerts:\s+dead→alerts$/m);
    const rm = await cli('task-type', 'rm', 'cli-report');
    expect([rm.code, rm.stdout]).toEqual([0, 'config of task type cli-report removed\n']);
    const gone = await cli('task-type', 'get', 'cli-report');
    expect(gone.code).toBe(3);
    expect(gone.stderr).toMatch(/cli-report/);
    const bad = await cli('task-type', 'set', 'cli-report', '--pause-after-dead', 'lots');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--pause-after-dead: "lots" is not a whole number (0 = never)');
    expect((await cliJson<unknown[]>('task-type', 'ls')).length).toBe(0);
  });

  it('cluster transfer moves leadership', async () => {
    const before = await cliJson<{ leaderId: string }>('cluster', 'status');
    const target = ['n1', 'n2', 'n3'].find((id) => id !== before.leaderId)!;
    const moved = await cliJson<{ leaderId: string }>('cluster', 'transfer', target);
    expect(moved.leaderId).toBe(target);
  });

  it('`herald dev add-node` starts n4 in the running dev, adds it as a learner and promotes it; dev.json keeps it', async () => {
    const r = await runCli(['dev', 'add-node', '--data-dir', join(dir, 'data')], { timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^starting n4 \(client 127\.0\.0\.1:\d+, peer 127\.0\.0\.1:\d+\); it joins the running cluster$/m);
    expect(r.stdout).toMatch(/^n4 added as a learner \(incarnation [0-9a-f]+\)/m);
    expect(r.stdout).toMatch(/^n4 promoted: voters n1, n2, n3, n4$/m);
    const st = await cliJson<{ members: Array<{ id: string; member: string }> }>('cluster', 'status');
    expect(st.members.map((m) => `${m.id}:${m.member}`).sort()).toEqual(['n1:voter', 'n2:voter', 'n3:voter', 'n4:voter']);
    expect(JSON.parse(readFileSync(join(dir, 'data', 'dev.json'), 'utf8'))).toMatchObject({ nodes: 3, joined: 1 });
    // Nobody to ask: exit 2, saying so.
    const none = await runCli(['dev', 'add-node', '--data-dir', join(dir, 'no-dev-here')], { timeoutMs: 30_000 });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no herald dev is running on .*no-dev-here/);
  }, 120_000);

  it('a killed follower shows as unreachable/down; dev reports it and keeps the cluster going', async () => {
    const before = await cliJson<{ leaderId: string }>('cluster', 'status');
    const victim = ['n1', 'n2', 'n3'].find((id) => id !== before.leaderId)!;
    const pids = pidsWithArg(dir).filter((pid) => pidsWithArg(`--id ${victim} `).includes(pid));
    expect(pids).toHaveLength(1);
    killPids(pids);
    await dev!.waitFor(new RegExp(`node ${victim} exited unexpectedly`), 10_000, 'stderr');
    const st = await cliJson<{ leaderId: string; members: Array<{ id: string; role: string; reachable: boolean }> }>('cluster', 'status');
    expect(st.leaderId).not.toBe('');
    expect(st.members.find((m) => m.id === victim)).toMatchObject({ role: 'unreachable', reachable: false });
    const table = await cli('cluster', 'status');
    expect(table.stdout).toMatch(new RegExp(`^${victim}\\s+voter\\s+unreachable\\s.*\\sdown\\s`, 'm'));
    // Two of three nodes still make progress.
    await cliJson<JobJson>('job', 'create', '--id', 'cli-after-kill', '--task-type', 'demo', '--every', '1h');
  });

  it('SIGTERM stops the dev cluster cleanly: exit 0, no process left', async () => {
    const exit = await dev!.stop('SIGTERM', 30_000);
    expect(exit.code, dev!.stderr).toBe(0);
    expect(dev!.stdout).toMatch(/^stopped$/m);
    expect(pidsWithArg(dir)).toEqual([]);
  });
});
