// The dashboard at scale, in a real browser: a 3-node cluster (real `herald server` processes
// with --http-addr and auth) holding --jobs N jobs (default 100,000), then Debian's chromium
// (playwright-core, headless) signs in with the admin token and every page is timed until its
// data shows: Overview, Jobs (first page, next page, filters by label, task type and state, the
// find box's id-prefix search), a Job page, Runs live, Dead letters, Workers. For each page: the
// time, the API requests the page made and the JSON bytes it received (page.on('response')), so
// a full list reaching the browser would show. The same API calls are then timed from Node
// (plain fetch, like curl).
//
// Jobs: ids with 8 prefixes (billing-…, crm-…), task types email 40 % / report 30 % / sync 20 % /
// etl ~10 % / audit 1 in 1,000, labels team (8 values) and env (prod / staging), 1 in 100
// paused; cron daily or weekly at hours at least 3 h away, so nothing fires during the bench.
// --dead M more jobs of task type "flaky" are triggered once each and fail for good on an
// in-process worker (M DEAD runs: the dead-letter view and the Overview's last-hour counts).
//
// Run: npm run bench -- dashboard-scale [--jobs 100000] [--dead 2000] [--rounds 3]
//      [--node leader|follower] [--batch 1000] [--inflight 4]
// The last stdout line is JSON.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { HeraldClient, NonRetryableError, Worker, cron, jobSpec, silentLogger } from '../src/client/index.js';
import { newTokenSecret } from '../src/server/auth/token-secret.js';
import { TestCluster, freePort, sleep, waitFor } from '../test/raft-runtime/helpers/cluster.js';
import { ensureChromium } from '../test/e2e/helpers/chromium.js';
import { numArg, strArg } from './lib/args.js';
import { machineLoad, rssMiB } from './lib/machine.js';
import { useBenchPortBlock } from './lib/ports.js';

const JOBS = numArg('jobs', 100_000);
const DEAD = numArg('dead', 2000);
const ROUNDS = numArg('rounds', 3);
const BATCH = numArg('batch', 1000);
const INFLIGHT = numArg('inflight', 4);
const NODE = strArg('node', 'leader');
const log = (m: string) => process.stderr.write(`[dashboard-scale] ${new Date().toISOString().slice(11, 19)} ${m}\n`);

// ---- the jobs
const PREFIXES = ['billing', 'crm', 'etl', 'mail', 'ops', 'reports', 'search', 'sync'];
const TEAMS = ['payments', 'growth', 'core', 'data', 'infra', 'mobile', 'web', 'support'];
const jobId = (i: number) => `${PREFIXES[i % 8]}-${String(i).padStart(7, '0')}`;
const taskTypeOf = (i: number) => (i % 1000 === 7 ? 'audit' : ['email', 'email', 'email', 'email', 'report', 'report', 'report', 'sync', 'sync', 'etl'][i % 10]!);
const teamOf = (i: number) => TEAMS[Math.floor(i / 8) % 8]!;
const pausedJob = (i: number) => i % 100 === 3;
// Hours at least 3 h from now (UTC), so no job fires while the bench runs.
const nowHour = new Date().getUTCHours();
const HOURS = Array.from({ length: 24 }, (_, h) => h).filter((h) => (h - nowHour + 24) % 24 >= 3 && (nowHour - h + 24) % 24 >= 1);
const specOf = (i: number) =>
  jobSpec({
    taskType: taskTypeOf(i),
    schedule: cron(i % 5 === 0 ? `${i % 60} ${HOURS[i % HOURS.length]} * * ${i % 7}` : `${i % 60} ${HOURS[i % HOURS.length]} * * *`, { tz: 'UTC' }),
    labels: { team: teamOf(i), env: i % 3 === 0 ? 'staging' : 'prod' },
  });
const deadId = (k: number) => `flaky-${String(k).padStart(5, '0')}`;

// ---- the cluster: real server processes, HTTP port on each, auth on
useBenchPortBlock();
const loadAtStart = machineLoad();
const dir = await mkdtemp(join(tmpdir(), 'herald-dash-scale-'));
const tokenFile = join(dir, 'admin.token');
const TOKEN = newTokenSecret().token;
await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
const raft = await TestCluster.create({
  size: 3,
  tickMs: 100,
  electionTicks: 10,
  extraArgs: ['--state-machine', 'scheduler', '--lease-ms', '30000', '--heartbeat-interval-ms', '2000', '--log-level', 'warn', '--auth-bootstrap-file', tokenFile],
});
const httpPorts = new Map<string, number>();
let browser: Browser | undefined;
let client: HeraldClient | undefined;
let worker: Worker | undefined;

async function api<T>(base: string, method: string, body: object, okStatus: number[] = []): Promise<{ ms: number; bytes: number; body: T }> {
  const t = performance.now();
  const res = await fetch(`${base}/herald.v1.${method}`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
  const text = await res.text();
  const ms = performance.now() - t;
  if (!res.ok && !okStatus.includes(res.status)) throw new Error(`${method}: ${res.status} ${text.slice(0, 300)}`);
  return { ms, bytes: Buffer.byteLength(text), body: JSON.parse(text) as T };
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
};

try {
  await Promise.all(
    [...raft.nodes.keys()].map(async (id) => {
      const port = await freePort();
      httpPorts.set(id, port);
      await raft.start(id, ['--http-addr', `127.0.0.1:${port}`]);
    }),
  );
  const anyBase = `http://127.0.0.1:${httpPorts.get('n1')}`;
  // GetStatus wants a token with auth on (TestCluster's status client has none): ask over HTTP.
  const leader = await waitFor(
    'a leader',
    async () => {
      const s = (await api<{ leaderId: string; role: string }>(anyBase, 'ClusterService/GetStatus', {})).body;
      return s.leaderId || undefined;
    },
    60_000,
    200,
  );
  const target = NODE === 'follower' ? [...raft.nodes.keys()].find((id) => id !== leader)! : leader;
  const base = `http://127.0.0.1:${httpPorts.get(target)}`;
  log(`leader ${leader}; the browser talks to ${target} (${base})`);
  client = new HeraldClient({ endpoints: [...raft.nodes.values()].map((n) => `127.0.0.1:${n.clientPort}`), token: TOKEN, defaultDeadlineMs: 120_000, logger: silentLogger });

  // ---- create
  const t0 = Date.now();
  let next = 0;
  let created = 0;
  let lastLog = t0;
  const chunks = Math.ceil(JOBS / BATCH);
  await Promise.all(
    Array.from({ length: INFLIGHT }, async () => {
      while (next < chunks) {
        const k = next++;
        let todo = Array.from({ length: Math.min(BATCH, JOBS - k * BATCH) }, (_, j) => k * BATCH + j);
        for (let attempt = 0; todo.length > 0; attempt++) {
          const res = await client!.createJobs(
            todo.map((i) => ({ id: jobId(i), spec: specOf(i), idempotencyKey: `create-${i}` })),
            { deadlineMs: 120_000 },
          );
          const retry = todo.filter((_, j) => res[j]!.error && res[j]!.error!.code !== 'ALREADY_EXISTS');
          const fatal = res.find((r) => r.error && !['ALREADY_EXISTS', 'UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(r.error.code));
          if (fatal || (retry.length && attempt >= 10)) throw new Error(`createJobs: ${(fatal ?? res.find((r) => r.error))!.error!.message}`);
          created += todo.length - retry.length;
          todo = retry;
          if (todo.length) await sleep(200);
        }
        if (Date.now() - lastLog > 10_000) {
          lastLog = Date.now();
          log(`${created} jobs, ${Math.round(created / ((lastLog - t0) / 1000))} jobs/s`);
        }
      }
    }),
  );
  const createMs = Date.now() - t0;
  log(`created ${created} jobs in ${createMs} ms`);
  const toPause = Array.from({ length: JOBS }, (_, i) => i).filter(pausedJob);
  for (let k = 0; k < toPause.length; k += 64) await Promise.all(toPause.slice(k, k + 64).map((i) => client!.pauseJob(jobId(i), 'bench')));
  log(`paused ${toPause.length}`);

  // ---- dead runs: flaky jobs triggered once, failing for good on a worker
  await client.createJobs(
    Array.from({ length: DEAD }, (_, k) => ({ id: deadId(k), spec: jobSpec({ taskType: 'flaky', schedule: cron('0 0 1 1 *', { tz: 'UTC' }), retry: { maxAttempts: 1 }, labels: { team: 'reports' } }) })),
  );
  worker = new Worker({
    endpoints: [...raft.nodes.values()].map((n) => `127.0.0.1:${n.clientPort}`),
    token: TOKEN,
    workerId: 'bench-flaky-worker',
    concurrency: 16,
    logger: silentLogger,
    handlers: {
      flaky: async () => {
        throw new NonRetryableError('report backend refused the request');
      },
    },
  });
  void worker.run();
  for (let k = 0; k < DEAD; k += 64) await Promise.all(Array.from({ length: Math.min(64, DEAD - k) }, (_, j) => client!.triggerJob(deadId(k + j))));
  await waitFor(
    `${DEAD} dead runs`,
    async () => {
      let n = 0;
      let pageToken = '';
      do {
        const r = await api<{ runs: unknown[]; nextPageToken: string }>(base, 'JobService/ListRuns', { state: 'RUN_STATE_DEAD', pageSize: 1000, pageToken });
        n += r.body.runs.length;
        pageToken = r.body.nextPageToken;
      } while (pageToken);
      return n >= DEAD || undefined;
    },
    300_000,
    2000,
  );
  log(`${DEAD} dead runs`);
  // The first CountRuns on the browser's node seeds its tally (one scan of its run records).
  const sinceHour = () => String(Date.now() - 3_600_000);
  const firstCount = await api<{ dead: string }>(base, 'JobService/CountRuns', { sinceUnixMs: sinceHour(), consistency: 'READ_CONSISTENCY_STALE' });
  log(`first CountRuns ${firstCount.ms.toFixed(1)} ms, dead ${firstCount.body.dead}`);
  const loadBeforeBrowser = machineLoad();

  // ---- the browser
  browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // Every API response, tagged with the step that was running when it was requested.
  let step = '';
  const seen: Array<{ step: string; method: string; bytes: Promise<number> }> = [];
  page.on('response', (r) => {
    const url = r.url();
    const m = /\/herald\.v1\.(\w+\/\w+)$/.exec(url);
    if (!m) return;
    // A watch stream's body never completes: counted as a request, its bytes are not.
    const streaming = m[1]!.includes('/Watch');
    seen.push({ step, method: m[1]!, bytes: streaming ? Promise.resolve(0) : r.body().then((b) => b.length, () => 0) });
  });

  const rows = (p: Page) => p.locator('tr[data-job]').evaluateAll((trs) => trs.map((tr) => ({ id: tr.getAttribute('data-job')!, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '') })));
  type Row = { id: string; cells: string[] };
  const idNum = (id: string) => Number(id.split('-').pop());
  const emptyNote = () => page.locator('p.muted', { hasText: /No match|No jobs match/ }).count();
  /** Rows are shown, every one passes `ok`, and (when given) there are at least `min`. */
  const jobsShown = async (ok: (r: Row) => boolean, min = 1) => {
    const rs = await rows(page);
    if (rs.length >= min && rs.every(ok)) return rs.length;
    if (min <= 1 && rs.length === 0 && (await emptyNote()) > 0) return 0;
    return undefined;
  };

  interface StepFigure {
    ms: number[];
    requests: number;
    jsonBytes: number;
    largestResponse: number;
    methods: Record<string, number>;
    shown?: number | string;
  }
  const figures: Record<string, StepFigure> = {};
  async function timed(name: string, act: () => Promise<unknown>, ready: () => Promise<number | string | undefined | boolean>): Promise<void> {
    step = name;
    const from = seen.length;
    const t = performance.now();
    await act();
    const shown = await waitFor(`${name} to show its data`, async () => (await ready()) ?? undefined, 120_000, 25);
    const ms = performance.now() - t;
    // Requests made by the step (polls included) until the data showed, plus a short settle.
    await sleep(300);
    step = '';
    const mine = seen.slice(from).filter((s) => s.step === name);
    const sizes = await Promise.all(mine.map((s) => s.bytes));
    const f = (figures[name] ??= { ms: [], requests: 0, jsonBytes: 0, largestResponse: 0, methods: {} });
    f.ms.push(round1(ms));
    f.requests = mine.length;
    f.jsonBytes = sizes.reduce((a, b) => a + b, 0);
    f.largestResponse = Math.max(0, ...sizes);
    f.methods = {};
    for (const s of mine) f.methods[s.method] = (f.methods[s.method] ?? 0) + 1;
    if (typeof shown === 'number' || typeof shown === 'string') f.shown = shown;
  }
  // Back to the unfiltered first page (a mix no filter's check accepts), so a filter step's check
  // sees its own rows, not those left from the step before.
  const toFirstPage = async (firstId: string) => {
    await hash('#/jobs');
    await waitFor('the first page again', async () => ((await rows(page))[0]?.id === firstId && (await rows(page)).length === 50) || undefined, 60_000, 25);
  };
  const hash = (h: string) => page.evaluate((x) => ((globalThis as unknown as { location: { hash: string } }).location.hash = x), h);

  // Sign in with the admin token.
  await page.goto(`${base}/#/login`);
  await page.getByLabel('API token').fill(TOKEN);
  await page.getByLabel('API token').press('Enter');
  await page.waitForURL(/#\/$/);

  const auditIds = new Set<number>();
  for (let r = 0; r < ROUNDS; r++) {
    log(`browser round ${r + 1}/${ROUNDS}`);
    // Overview: a fresh load of the app; ready when every stat has its figure.
    await page.goto('about:blank');
    await timed(
      'overview',
      () => page.goto(`${base}/#/`),
      async () => {
        const vals = await page.locator('.stat .stat-value').allTextContents();
        const members = await page.locator('table tbody tr').count();
        return vals.length >= 5 && vals.every((v) => !v.includes('…')) && members >= 3 ? vals.join(' | ') : undefined;
      },
    );
    // Jobs, first page (a fresh load).
    await page.goto('about:blank');
    await timed('jobs: first page', () => page.goto(`${base}/#/jobs`), () => jobsShown(() => true, 50));
    const first = (await rows(page)).map((r) => r.id);
    await timed(
      'jobs: next page',
      () => page.getByRole('link', { name: 'Next →' }).click(),
      () => jobsShown((r) => !first.includes(r.id), 50),
    );
    await toFirstPage(first[0]!);
    await timed(
      'jobs: label team=data',
      () => hash('#/jobs?label=team%3Ddata'),
      () => jobsShown((r) => teamOf(idNum(r.id)) === 'data'),
    );
    await toFirstPage(first[0]!);
    await timed(
      'jobs: task type sync (1 in 5)',
      () => hash('#/jobs?taskType=sync'),
      () => jobsShown((r) => r.cells[2] === 'sync'),
    );
    await toFirstPage(first[0]!);
    await timed(
      'jobs: task type audit (1 in 1,000)',
      () => hash('#/jobs?taskType=audit'),
      async () => {
        const n = await jobsShown((r) => r.cells[2] === 'audit');
        if (n !== undefined) for (const r of await rows(page)) auditIds.add(idNum(r.id));
        return n;
      },
    );
    await toFirstPage(first[0]!);
    await timed(
      'jobs: state paused (1 in 100)',
      () => hash('#/jobs?state=JOB_STATE_PAUSED'),
      () => jobsShown((r) => r.cells[1] === 'paused'),
    );
    // The find box: not an id, so the page lists the ids starting with it (GetJob, then ListJobs).
    await toFirstPage(first[0]!);
    const prefix = 'reports-00123';
    await timed(
      'jobs: find box, id prefix',
      async () => {
        await page.getByLabel('Job id').fill(prefix);
        await page.getByLabel('Job id').press('Enter');
      },
      () => jobsShown((r) => r.id.startsWith(prefix)),
    );
    // A job's page, opened from the find box by its id.
    const oneDead = deadId(r);
    await timed(
      'job page',
      async () => {
        await page.getByLabel('Job id').fill(oneDead);
        await page.getByLabel('Job id').press('Enter');
      },
      async () => ((await page.locator('dl.spec').count()) > 0 && (await page.locator(`tr[data-run^="${oneDead}@"]`).count()) > 0) || undefined,
    );
    // Runs live: the stream connected, then a run triggered now shows up.
    await timed('runs live: connected', () => hash('#/runs'), async () => (await page.locator('.badge', { hasText: 'watching' }).count()) > 0 || undefined);
    const trig = deadId(DEAD - 1 - r);
    await timed(
      'runs live: a triggered run shows DEAD',
      () => client!.triggerJob(trig),
      async () => (await page.locator(`tr[data-run^="${trig}@"][data-state="RUN_STATE_DEAD"]`).count()) > 0 || undefined,
    );
    await timed('dead letters', () => hash('#/runs/dead'), async () => ((await page.locator('table.dead tr[data-run]').count()) >= 50 ? 50 : undefined));
    await timed('workers', () => hash('#/workers'), async () => (await page.locator('td', { hasText: 'bench-flaky-worker' }).count()) > 0 || undefined);
  }
  const loadAfterBrowser = machineLoad();

  // ---- the same calls from Node (like curl)
  const firstPage = await api<{ nextPageToken: string }>(base, 'JobService/ListJobs', { pageSize: 50 });
  const calls: Record<string, [string, object]> = {
    'GetStatus': ['ClusterService/GetStatus', {}],
    'ListWorkers': ['ClusterService/ListWorkers', {}],
    'CountRuns last hour (Overview)': ['JobService/CountRuns', { sinceUnixMs: sinceHour(), consistency: 'READ_CONSISTENCY_STALE' }],
    'ListRuns DEAD, 1,000 (what the Overview read before CountRuns)': ['JobService/ListRuns', { state: 'RUN_STATE_DEAD', pageSize: 1000, consistency: 'READ_CONSISTENCY_STALE' }],
    'ListJobs first 50': ['JobService/ListJobs', { pageSize: 50 }],
    'ListJobs next 50': ['JobService/ListJobs', { pageSize: 50, pageToken: firstPage.body.nextPageToken }],
    'ListJobs label team=data': ['JobService/ListJobs', { pageSize: 50, labelSelector: { team: 'data' } }],
    'ListJobs task type sync': ['JobService/ListJobs', { pageSize: 50, taskType: 'sync' }],
    'ListJobs task type audit': ['JobService/ListJobs', { pageSize: 50, taskType: 'audit' }],
    'ListJobs state paused': ['JobService/ListJobs', { pageSize: 50, state: 'JOB_STATE_PAUSED' }],
    'GetJob (not found: find box)': ['JobService/GetJob', { jobId: 'reports-00123' }],
    'ListJobs id prefix reports-00123': ['JobService/ListJobs', { pageSize: 50, idPrefix: 'reports-00123' }],
    'GetJob + 10 fires': ['JobService/GetJob', { jobId: deadId(0), upcomingFires: 10 }],
    'ListRuns of a job, 25': ['JobService/ListRuns', { jobId: deadId(0), pageSize: 25 }],
    'ListRuns DEAD, 50 (dead letters)': ['JobService/ListRuns', { state: 'RUN_STATE_DEAD', pageSize: 50 }],
    'ListTaskTypes': ['TaskTypeService/ListTaskTypes', {}],
  };
  const http: Record<string, { p50Ms: number; maxMs: number; bytes: number; items?: number }> = {};
  for (const [name, [method, body]] of Object.entries(calls)) {
    const ms: number[] = [];
    let bytes = 0;
    let items: number | undefined;
    for (let r = 0; r < Math.max(3, ROUNDS); r++) {
      // The find box's GetJob of a prefix answers NOT_FOUND (HTTP 404): timed like the rest.
      const res = await api<{ jobs?: unknown[]; runs?: unknown[]; dead?: string }>(base, method, body, [404]);
      ms.push(res.ms);
      bytes = res.bytes;
      items = res.body.jobs?.length ?? res.body.runs?.length ?? (res.body.dead !== undefined ? Number(res.body.dead) : undefined);
    }
    http[name] = { p50Ms: round1(median(ms)), maxMs: round1(Math.max(...ms)), bytes, ...(items !== undefined ? { items } : {}) };
  }
  // How many full ListJobs scans of LIST_JOBS_SCAN_BUDGET it takes to walk the rare filter to the end.
  let auditCalls = 0;
  let auditFound = 0;
  let auditMs = 0;
  let tok = '';
  do {
    const r = await api<{ jobs: unknown[]; nextPageToken: string }>(base, 'JobService/ListJobs', { pageSize: 50, taskType: 'audit', pageToken: tok });
    auditCalls++;
    auditFound += r.body.jobs.length;
    auditMs += r.ms;
    tok = r.body.nextPageToken;
  } while (tok);

  const pages = Object.fromEntries(
    Object.entries(figures).map(([k, f]) => [k, { p50Ms: median(f.ms), ms: f.ms, requests: f.requests, jsonBytes: f.jsonBytes, largestResponse: f.largestResponse, methods: f.methods, ...(f.shown !== undefined ? { shown: f.shown } : {}) }]),
  );
  const rss = Object.fromEntries([...raft.nodes.values()].map((n) => [n.id, rssMiB(n.proc?.pid).rss]));
  console.log(
    JSON.stringify({
      bench: 'dashboard-scale',
      jobs: JOBS,
      deadRuns: DEAD,
      paused: toPause.length,
      rounds: ROUNDS,
      browserNode: NODE === 'follower' ? 'follower' : 'leader',
      createSeconds: round1(createMs / 1000),
      pages,
      http,
      auditWalk: { calls: auditCalls, jobs: auditFound, totalMs: Math.round(auditMs) },
      countRunsFirstCall: { ms: round1(firstCount.ms), dead: Number(firstCount.body.dead) },
      pageErrors,
      rssMiB: rss,
      machine: { atStart: loadAtStart, beforeBrowser: loadBeforeBrowser, afterBrowser: loadAfterBrowser },
    }),
  );
} finally {
  await browser?.close().catch(() => undefined);
  await worker?.shutdown({ graceMs: 1000 }).catch(() => undefined);
  client?.close();
  await raft.cleanup();
  await rm(dir, { recursive: true, force: true });
}
