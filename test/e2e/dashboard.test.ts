// The dashboard in a real headless browser (Debian's chromium via playwright-core) against
// `herald dev`: log in, find a job, pause it, trigger a run and watch it finish live, see a
// failing job's run go DEAD and re-drive it from the dead-letter view — asserting on the page and
// on the API. Screenshots of every page go to a temp dir, or to docs/dashboard/ with
// HERALD_DASHBOARD_SCREENSHOTS=1 (how the committed ones were taken).
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonRetryableError, Worker } from '../../src/client/index.js';
import { CliProcess, freeBasePort } from '../cli/helpers/run-cli.js';
import { killPids, pidsWithArg } from '../cli/helpers/processes.js';
import { ensureChromium } from './helpers/chromium.js';

// The dev cluster's admin token (dev runs with auth; its banner names the file).
let TOKEN = '';

let dir = '';
let dev: CliProcess | undefined;
let browser: Browser | undefined;
let worker: Worker | undefined;
let base = '';
let shots = '';
const flakyCalls = new Map<string, number>();

async function api<T>(method: string, body: object): Promise<T> {
  const res = await fetch(`${base}/herald.v1.${method}`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${TOKEN}` } });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  dir = await mkdtemp(join(tmpdir(), 'herald-e2e-'));
  shots = process.env.HERALD_DASHBOARD_SCREENSHOTS === '1' ? join(import.meta.dirname, '..', '..', 'docs', 'dashboard') : join(dir, 'shots');
  mkdirSync(shots, { recursive: true });
  const basePort = await freeBasePort();
  dev = new CliProcess(['dev', '--data-dir', join(dir, 'data'), '--base-port', String(basePort), '--log-level', 'warn']);
  const [, url] = await dev.waitFor(/dashboard\s+(http:\/\/127\.0\.0\.1:\d+\/)/, 90_000);
  await dev.waitFor(/Ctrl-C stops everything/, 30_000);
  base = url!.replace(/\/$/, '');
  const tokenFile = /admin token\s+(\S+)/.exec(dev.stdout)?.[1];
  if (!tokenFile) throw new Error(`herald dev printed no admin token file:\n${dev.stdout}`);
  TOKEN = readFileSync(tokenFile, 'utf8').trim();
  const ca = join(dir, 'data', 'certs', 'ca.crt');
  // A worker for the failing job: its first attempt of a run fails for good, a re-driven one succeeds.
  worker = new Worker({
    endpoints: [1, 2, 3].map((i) => `127.0.0.1:${basePort + i}`),
    ...(existsSync(ca) ? { tls: { ca: readFileSync(ca) } } : {}),
    workerId: 'e2e-flaky-worker',
    token: TOKEN,
    handlers: {
      flaky: async ({ run }) => {
        const n = (flakyCalls.get(run.id) ?? 0) + 1;
        flakyCalls.set(run.id, n);
        if (n === 1) throw new NonRetryableError('report backend refused the request');
        return { recovered: true };
      },
    },
  });
  void worker.run();
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}, 400_000);

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await worker?.shutdown({ graceMs: 1000 }).catch(() => undefined);
  await dev?.stop('SIGTERM', 15_000).catch(() => undefined);
  if (dir) killPids(pidsWithArg(dir));
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('the dashboard in a browser', () => {
  it('logs in, pauses and triggers a job and watches it finish, re-drives a dead run', async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    const sentTokens = new Set<string>();
    page.on('request', (r) => {
      if (r.url().includes('/herald.v1.')) sentTokens.add(r.headers().authorization ?? '');
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));

    // Log in with a token: kept in sessionStorage, sent as the Authorization header.
    await page.goto(`${base}/#/login`);
    await page.getByLabel('API token').fill(TOKEN);
    await page.getByLabel('API token').press('Enter');
    await page.waitForURL(/#\/$/);
    await expect.poll(() => page.locator('.stat', { hasText: 'workers connected' }).locator('.stat-value').textContent(), { timeout: 10_000 }).toBe('2');
    await expect.poll(() => page.locator('.stat', { hasText: 'leader' }).locator('.stat-value').textContent()).toMatch(/^n[123]$/);
    await expect.poll(() => page.locator('.stat', { hasText: 'runs finished' }).locator('.stat-value').textContent()).toMatch(/^\d+\.\d$/);
    await shot(page, 'overview');

    // Find the job: the job list, then open it by id with the keyboard.
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await expect.poll(() => page.locator('tr[data-job]').count()).toBeGreaterThanOrEqual(3);
    await shot(page, 'jobs');
    // Not an id: the start of some (the server lists that id range only).
    await page.getByLabel('Job id').fill('demo-c');
    await page.getByLabel('Job id').press('Enter');
    await page.waitForURL(/prefix=demo-c/);
    await expect.poll(() => page.locator('tr[data-job]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-job')))).toEqual(['demo-cron-15s']);
    await page.getByLabel('Job id').fill('demo-every-5s');
    await page.getByLabel('Job id').press('Enter');
    await page.waitForURL(/#\/jobs\/demo-every-5s$/);
    await expect.poll(() => page.locator('dl.spec').textContent()).toContain('every 5 s');

    // A second tab (its own sessionStorage) signs in with dev's login link and watches runs live.
    // The link signs in once: the page trades its token for a session token and revokes it.
    const link = /dashboard login\s+(\S+)\s+\(signs in once\)/.exec(dev!.stdout)?.[1];
    if (!link) throw new Error(`herald dev printed no login link:\n${dev!.stdout}`);
    const linkToken = decodeURIComponent(link.split('#login=')[1]!);
    const live = await context.newPage();
    const liveTokens: string[] = [];
    live.on('request', (r) => {
      const a = r.headers().authorization ?? '';
      if (r.url().includes('/herald.v1.') && liveTokens.at(-1) !== a) liveTokens.push(a);
    });
    await live.goto(link);
    await live.waitForURL(/#\/$/);
    // Signed in once the page has rendered (after the link's token was traded).
    await live.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 15_000 });
    expect(live.url()).not.toContain(linkToken);
    const tokenNames = async () => (await api<{ tokens: Array<{ name: string }> }>('AuthService/ListTokens', {})).tokens.map((t) => t.name);
    await expect.poll(tokenNames).not.toContain('login-link-dev');
    expect((await tokenNames()).filter((n) => n.startsWith('dashboard-session-'))).toHaveLength(1);
    // Used once: the same link again lands on the sign-in page, saying why.
    const again = await context.newPage();
    await again.goto(link);
    await again.getByText('This login link was used already').waitFor({ timeout: 10_000 });
    await again.close();
    await live.goto(`${base}/#/runs`);
    await live.locator('.badge', { hasText: 'watching' }).waitFor({ timeout: 10_000 });

    // Pause, with confirmation.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Pause' }).click();
    await page.locator('h1 .badge', { hasText: 'paused' }).waitFor({ timeout: 10_000 });
    const paused = await api<{ job: { state: string } }>('JobService/GetJob', { jobId: 'demo-every-5s' });
    expect(paused.job.state).toBe('JOB_STATE_PAUSED');

    // Trigger a run; the live tab sees it succeed.
    await page.getByRole('button', { name: 'Trigger' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Trigger' }).click();
    // A manual run's id ends in ~m<n>; a scheduled run fired just before the pause may finish too.
    const manual = live.locator('tr[data-run^="demo-every-5s@"][data-run*="~m"][data-state="RUN_STATE_SUCCEEDED"]');
    await manual.first().waitFor({ timeout: 20_000 });
    const manualId = await manual.first().getAttribute('data-run');
    const manualRun = await api<{ run: { state: string; manual: boolean } }>('JobService/GetRun', { runId: manualId });
    expect(manualRun.run).toMatchObject({ state: 'RUN_STATE_SUCCEEDED', manual: true });
    await page.locator(`tr[data-run="${manualId}"]`).waitFor({ timeout: 10_000 });
    await shot(page, 'job');

    // A failing job's run goes DEAD, live.
    await api('JobService/CreateJob', {
      jobId: 'nightly-report',
      spec: { taskType: 'flaky', schedule: { cron: { expression: '0 3 * * *', timeZone: 'Europe/Berlin' } }, retry: { maxAttempts: 1 }, labels: { team: 'reports' } },
    });
    const triggered = await api<{ run: { id: string } }>('JobService/TriggerJob', { jobId: 'nightly-report' });
    const deadId = triggered.run.id;
    await live.locator(`tr[data-run="${deadId}"][data-state="RUN_STATE_DEAD"]`).waitFor({ timeout: 20_000 });
    await shot(live, 'runs-live');
    // The Overview counts it (CountRuns): one dead run in the last hour.
    await page.goto(`${base}/#/`);
    await expect.poll(() => page.locator('.stat', { hasText: 'dead runs, last hour' }).locator('.stat-value').textContent(), { timeout: 10_000 }).toBe('1');

    // Re-drive it from the dead-letter view.
    await page.getByRole('link', { name: 'Dead letters', exact: true }).click();
    const row = page.locator(`tr[data-run="${deadId}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await row.textContent()).toContain('report backend refused the request');
    await shot(page, 'dead-letters');
    await row.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('status').filter({ hasText: `re-driven ${deadId}` }).waitFor({ timeout: 10_000 });
    await live.locator(`tr[data-run="${deadId}"][data-state="RUN_STATE_SUCCEEDED"]`).waitFor({ timeout: 20_000 });
    const redriven = await api<{ run: { state: string; redriveCount: number; attempts: Array<{ outcome: string }> } }>('JobService/GetRun', { runId: deadId });
    expect(redriven.run.state).toBe('RUN_STATE_SUCCEEDED');
    expect(redriven.run.redriveCount).toBe(1);
    expect(redriven.run.attempts.map((a) => a.outcome)).toEqual(['ATTEMPT_OUTCOME_FAILED', 'ATTEMPT_OUTCOME_SUCCEEDED']);
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(0);

    // Workers and task types; the phone layout.
    await page.getByRole('link', { name: 'Workers', exact: true }).click();
    await page.locator('td', { hasText: 'e2e-flaky-worker' }).waitFor({ timeout: 10_000 });
    await shot(page, 'workers');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/#/jobs/nightly-report`);
    await page.locator('dl.spec', { hasText: 'Europe/Berlin' }).waitFor({ timeout: 10_000 });
    await shot(page, 'job-phone');

    expect([...sentTokens]).toEqual([`Bearer ${TOKEN}`]);
    // The live tab: the link's token while trading it, then only its session token.
    expect(liveTokens).toHaveLength(2);
    expect(liveTokens[0]).toBe(`Bearer ${linkToken}`);
    expect(liveTokens[1]).not.toContain(TOKEN);
    expect(errors).toEqual([]);
    for (const name of ['overview', 'jobs', 'job', 'runs-live', 'dead-letters', 'workers', 'job-phone']) expect(statSync(join(shots, `${name}.png`)).size).toBeGreaterThan(10_000);
    await context.close();

    // A viewer's token: the job page the admin paused and triggered from shows the job and offers
    // no write (WhoAmI tells the page the role).
    const { secret } = await api<{ secret: string }>('AuthService/CreateToken', { name: 'e2e-viewer', role: 'ROLE_VIEWER' });
    const viewerContext = await browser!.newContext({ viewport: { width: 1280, height: 860 } });
    const viewer = await viewerContext.newPage();
    await viewer.goto(`${base}/#login=${encodeURIComponent(secret)}`);
    await viewer.waitForURL(/#\/$/);
    await viewer.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 15_000 });
    await viewer.goto(`${base}/#/jobs/demo-every-5s`);
    await viewer.locator('h1 .badge', { hasText: 'paused' }).waitFor({ timeout: 20_000 });
    expect(await viewer.getByRole('button', { name: /^(Pause|Resume|Trigger|Delete)$/ }).count()).toBe(0);
    await viewerContext.close();
  }, 90_000);
});
