// The dashboard's job list at scale: one in-process scheduler node holding --jobs N jobs (every
// --task-types'th of task type "rare", one in 100 paused, each with label shard=i%10), then the
// calls the Jobs page makes over the HTTP port, timed: the first page, a page deep in the list,
// and pages filtered by state, task type and label.
//   npx tsx bench/dashboard-paging.ts --jobs 100000 [--rounds 5]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createSchedulerNode } from '../src/server/scheduler-node.js';
import { freePort } from '../test/api/helpers/free-port.js';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '5' }, 'rare-every': { type: 'string', default: '1000' } } });
const jobs = Number(values.jobs);
const rounds = Number(values.rounds);
const rareEvery = Number(values['rare-every']);

const dir = await mkdtemp(join(tmpdir(), 'herald-dash-bench-'));
const [peer, api] = [await freePort(), await freePort()];
const sn = await createSchedulerNode({
  id: 'n1',
  members: [{ id: 'n1', peerAddress: `127.0.0.1:${peer}`, clientAddress: `127.0.0.1:${api}` }],
  dataDir: join(dir, 'n1'),
  logger: pino({ level: 'silent' }),
  httpListen: '127.0.0.1:0',
});
const base = `http://127.0.0.1:${sn.httpPort}/herald.v1.JobService`;
while (!(sn.node.driver.isLeader() && sn.node.clusterClock.nowMs() !== undefined)) await new Promise((r) => setTimeout(r, 20));

async function post<T>(method: string, body: object): Promise<{ ms: number; body: T }> {
  const t = performance.now();
  const res = await fetch(`${base}/${method}`, { method: 'POST', body: JSON.stringify(body) });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method}: ${JSON.stringify(json)}`);
  return { ms: performance.now() - t, body: json };
}

const created = performance.now();
for (let from = 0; from < jobs; from += 5000) {
  const items = [];
  for (let i = from; i < Math.min(jobs, from + 5000); i++) {
    items.push({
      jobId: `job-${String(i).padStart(7, '0')}`,
      spec: { taskType: i % rareEvery === 0 ? 'rare' : 'common', schedule: { cron: { expression: `${i % 60} ${i % 24} * * *`, timeZone: 'UTC' } }, labels: { shard: String(i % 10) } },
    });
  }
  await post('CreateJobs', { items });
}
const createMs = performance.now() - created;
// Pause one job in a hundred.
for (let i = 0; i < jobs; i += 100) await post('PauseJob', { jobId: `job-${String(i).padStart(7, '0')}` });

const cases: Record<string, object> = {
  'first page': { pageSize: 50 },
  'paused, first page': { pageSize: 50, state: 'JOB_STATE_PAUSED' },
  'task type rare (1 in N), first page': { pageSize: 50, taskType: 'rare' },
  'label shard=7, first page': { pageSize: 50, labelSelector: { shard: '7' } },
};
const deepToken = (await post<{ nextPageToken: string }>('ListJobs', { pageSize: 1000, pageToken: '' })).body.nextPageToken;
cases['page after 1,000'] = { pageSize: 50, pageToken: deepToken };
const result: Record<string, { p50Ms: number; maxMs: number; jobs: number }> = {};
for (const [name, req] of Object.entries(cases)) {
  const times: number[] = [];
  let n = 0;
  for (let r = 0; r < rounds; r++) {
    const { ms, body } = await post<{ jobs: unknown[] }>('ListJobs', req);
    times.push(ms);
    n = body.jobs.length;
  }
  times.sort((a, b) => a - b);
  result[name] = { p50Ms: Math.round(times[Math.floor(times.length / 2)]! * 10) / 10, maxMs: Math.round(times[times.length - 1]! * 10) / 10, jobs: n };
}
await sn.stop({ transfer: false, graceMs: 500 });
await rm(dir, { recursive: true, force: true });
console.log(JSON.stringify({ jobs, createSeconds: Math.round(createMs / 100) / 10, listJobs: result }));
