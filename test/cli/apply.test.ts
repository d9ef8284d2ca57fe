// `herald apply -f` and `herald job get|ls -o yaml|json` run as users run them, against a real
// local cluster (`herald dev --no-worker`): create, unchanged, per-field dry run, update, prune by
// selector, optimistic-concurrency conflicts, a bad file that changes nothing, the round trip
// get -o yaml | apply -f -, and the job create/update flags for every JobSpec field.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcess, freeBasePort, runCli, type CliResult } from './helpers/run-cli.js';
import { killPids, pidsWithArg } from './helpers/processes.js';

let dir = '';
let dev: CliProcess | undefined;
let endpoints = '';

function cli(...args: string[]): Promise<CliResult> {
  return runCli([...args, '--endpoints', endpoints], { timeoutMs: 60_000 });
}

/** `herald <args>` with `input` on stdin. */
function cliStdin(input: string, ...args: string[]): Promise<CliResult> {
  return runCli([...args, '--endpoints', endpoints], { timeoutMs: 60_000, input });
}

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

const JOBS_V1 = `
id: fin-nightly
taskType: report
schedule:
  cron: {expression: "0 2 * * *", timeZone: Europe/Berlin}
payload: {format: pdf}
retry: {maxAttempts: 5, initialBackoff: 30s}
overlapPolicy: forbid
labels: {team: finance}
---
id: fin-hourly
taskType: report
schedule: {every: {interval: 1h}}
labels: {team: finance}
---
id: fin-old
taskType: report
schedule: {every: {interval: 1h}}
labels: {team: finance}
`;

// fin-old is gone from the file, fin-hourly changes two fields and gains a label.
const JOBS_V2 = `
id: fin-nightly
taskType: report
schedule:
  cron: {expression: "0 2 * * *", timeZone: Europe/Berlin}
payload: {format: pdf}
retry: {maxAttempts: 5, initialBackoff: 30s}
overlapPolicy: forbid
labels: {team: finance}
---
id: fin-hourly
taskType: report
schedule: {every: {interval: 2h}}
jitter: 1m
labels: {team: finance, tier: "1"}
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-cli-apply-'));
  const base = await freeBasePort();
  // Five nodes here (`herald dev --nodes 5`), three in the other dev tests.
  endpoints = [1, 2, 3, 4, 5].map((i) => `127.0.0.1:${base + i}`).join(',');
  dev = new CliProcess(['dev', '--data-dir', join(dir, 'data'), '--base-port', String(base), '--nodes', '5', '--no-demo', '--no-worker', '--log-level', 'warn']);
  await dev.waitFor(/Ctrl-C stops everything/, 60_000);
  // The dev cluster runs TLS with a CA it made in its data dir; every CLI process below trusts it.
  process.env.HERALD_CA = join(dir, 'data', 'certs', 'ca.crt');
  // It runs with auth too; its admin token is in the same directory.
  process.env.HERALD_TOKEN = readFileSync(join(dir, 'data', 'certs', 'admin.token'), 'utf8').trim();
}, 90_000);

afterAll(async () => {
  await dev?.stop('SIGKILL').catch(() => undefined);
  killPids(pidsWithArg(dir));
  if (endpoints) killPids(pidsWithArg(endpoints));
  await rm(dir, { recursive: true, force: true });
}, 30_000);

describe('herald dev --nodes 5', () => {
  it('runs five voters, and the data dir keeps that size', async () => {
    expect(dev!.stdout).toMatch(/starting a 5-node Herald dev cluster/);
    const st = await cli('cluster', 'status', '--json');
    expect(st.code, st.stderr).toBe(0);
    const members = (JSON.parse(st.stdout) as { members: Array<{ id: string; member: string }> }).members;
    expect(members.map((m) => `${m.id}:${m.member}`).sort()).toEqual(['n1:voter', 'n2:voter', 'n3:voter', 'n4:voter', 'n5:voter']);
    // Another size on the same data dir is refused before any node starts.
    const other = await runCli(['dev', '--data-dir', join(dir, 'data'), '--nodes', '3'], { timeoutMs: 60_000 });
    expect(other.code, other.stderr).toBe(2);
    expect(other.stderr).toMatch(/holds a 5-node dev cluster; use --nodes 5/);
  });
});

describe('herald apply', () => {
  it('creates, leaves unchanged, shows a per-field dry run, updates and prunes by selector', async () => {
    const v1 = await file('jobs-v1.yaml', JOBS_V1);
    const first = await cli('apply', '-f', v1);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^created job fin-nightly \(version 1\)$/m);
    expect(first.stdout).toMatch(/^ {4}\+ schedule\.cron\.expression: "0 2 \* \* \*"$/m);
    expect(first.stdout).toMatch(/^applied: 3 created, 0 updated, 0 unchanged, 0 deleted$/m);

    const again = await cli('apply', '-f', v1);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^applied: 0 created, 0 updated, 3 unchanged, 0 deleted$/m);

    const v2 = await file('jobs-v2.yaml', JOBS_V2);
    const dry = await cli('apply', '-f', v2, '--prune', '--selector', 'team=finance', '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toBe(
      [
        'unchanged job fin-nightly (version 1)',
        'update job fin-hourly (version 1)',
        '    ~ schedule.every.interval: "1h" → "2h"',
        '    + jitter: "1m"',
        '    + labels.tier: "1"',
        'delete job fin-old (version 1)',
        'dry run: 0 to create, 1 to update, 1 unchanged, 1 to delete; nothing was changed',
        '',
      ].join('\n'),
    );
    const stillThere = await cli('job', 'get', 'fin-old', '--json');
    expect(stillThere.code).toBe(0);

    const applied = await cli('apply', '-f', v2, '--prune', '--selector', 'team=finance', '--json');
    expect(applied.code, applied.stderr).toBe(0);
    const body = JSON.parse(applied.stdout) as { dryRun: boolean; items: Array<{ id: string; action: string; newVersion?: number }> };
    expect(body.dryRun).toBe(false);
    expect(body.items.map((i) => [i.id, i.action, i.newVersion])).toEqual([
      ['fin-nightly', 'unchanged', 1],
      ['fin-hourly', 'update', 2],
      ['fin-old', 'delete', undefined],
    ]);
    expect((await cli('job', 'get', 'fin-old')).code).toBe(3);
    const hourly = JSON.parse((await cli('job', 'get', 'fin-hourly', '-o', 'json')).stdout) as Record<string, unknown>;
    // herald dev runs with auth: the document says who made and changed the job (apply ignores both).
    expect(hourly).toEqual({
      id: 'fin-hourly',
      version: 2,
      taskType: 'report',
      schedule: { every: { interval: '2h' } },
      jitter: '1m',
      labels: { team: 'finance', tier: '1' },
      createdBy: 'bootstrap-admin',
      updatedBy: 'bootstrap-admin',
    });

    expect((await cli('apply', '-f', v2, '--prune')).stderr).toMatch(/--prune needs --selector/);
  }, 60_000);

  it('round-trips: job get -o yaml | apply -f - is unchanged, and so is job ls -o json', async () => {
    const created = await cli(
      'job', 'create', '--id', 'rt-1', '--task-type', 'report', '--cron', '*/5 * * * *', '--tz', 'America/New_York',
      '--payload', '{"a":[1,2],"b":"x"}', '--max-attempts', '4', '--backoff', '2s', '--max-backoff', '1m', '--backoff-multiplier', '1.5',
      '--non-retryable', 'BadInput,Forbidden', '--misfire', 'run-all', '--misfire-max-runs', '7', '--starting-deadline', '30s', '--jitter', '5s',
      '--exec-timeout', '10m', '--lease', '20s', '--overlap', 'replace', '--priority', '9', '--max-pending-runs', '40', '--dst-gap', 'skip',
      '--retention-max-runs', '25', '--retention-max-age', '2d', '--label', 'team=rt', '--start', '2030-01-01T00:00:00Z',
    );
    expect(created.code, created.stderr).toBe(0);
    const yaml = await cli('job', 'get', 'rt-1', '-o', 'yaml');
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(yaml.stdout).toContain('dst:\n  gap: skip\n'); // fold: resolved AUTO, written as unset
    expect(yaml.stdout).toContain('retention:\n  maxRuns: 25\n  maxAge: 2d\n');
    const back = await cliStdin(yaml.stdout, 'apply', '-f', '-');
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toBe('unchanged job rt-1 (version 1)\napplied: 0 created, 0 updated, 1 unchanged, 0 deleted\n');

    const list = await cli('job', 'ls', '--label', 'team=rt', '-o', 'json');
    const listed = await file('listed.json', list.stdout);
    const fromList = await cli('apply', '-f', listed);
    expect(fromList.stdout).toMatch(/^unchanged job rt-1/m);

    // The document says which version it was read at: a change since then is a conflict.
    expect((await cli('job', 'update', 'rt-1', '--priority', '10')).code).toBe(0);
    const stale = await cliStdin(yaml.stdout, 'apply', '-f', '-');
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/CONFLICT: \(stdin\) doc 1 \(id rt-1\): job rt-1 is at version 2, not 1 as the document says/);
    expect(JSON.parse((await cli('job', 'get', 'rt-1', '--json')).stdout).spec.priority).toBe(10);
  }, 60_000);

  it('a bad file changes nothing, and names each document, job and field', async () => {
    const bad = await file(
      'bad.yaml',
      `id: good-one\ntaskType: t\nschedule: {every: {interval: 5m}}\n---\nid: bad-cron\ntaskType: t\nschedule: {cron: {expression: "0 25 * * *"}}\n---\nid: bad-enum\ntaskType: t\nschedule: {every: {interval: 5m}}\noverlapPolicy: sometimes\n`,
    );
    const r = await cli('apply', '-f', bad);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad.yaml doc 2 \(id bad-cron\): schedule\.cron\.expression: /);
    expect(r.stderr).toMatch(/bad.yaml doc 3 \(id bad-enum\): overlapPolicy: unknown value "sometimes"/);
    expect(r.stderr).toMatch(/2 problems; nothing was changed/);
    expect((await cli('job', 'get', 'good-one')).code).toBe(3);
  }, 60_000);

  it('job create/update flags cover DST, retry and retention fields', async () => {
    const c = await cli('job', 'create', '--id', 'flags-1', '--task-type', 't', '--cron', '0 2 * * *', '--tz', 'Europe/Berlin', '--dst-fold', 'last', '--json');
    expect(c.code, c.stderr).toBe(0);
    const u = await cli('job', 'update', 'flags-1', '--dst-gap', 'skip', '--non-retryable', 'Fatal', '--retention-max-age', '1d', '--json');
    expect(u.code, u.stderr).toBe(0);
    const doc = JSON.parse((await cli('job', 'get', 'flags-1', '-o', 'json')).stdout) as Record<string, unknown>;
    expect(doc).toMatchObject({ dst: { gap: 'skip', fold: 'last' }, retry: { nonRetryableErrorTypes: ['Fatal'] }, retention: { maxAge: '1d' } });
    const auto = await cli('job', 'update', 'flags-1', '--dst-fold', 'auto', '--json');
    expect(auto.code, auto.stderr).toBe(0);
    expect(JSON.parse((await cli('job', 'get', 'flags-1', '-o', 'json')).stdout)).toMatchObject({ dst: { gap: 'skip' } });
    expect(JSON.parse(auto.stdout).spec.dst.fold).toBe('first'); // AUTO resolved by the server for `0 2 * * *`
  }, 60_000);
});
