import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeMetrics } from '../../src/server/node/metrics.js';
import { startMetricsServer } from '../../src/server/node/metrics-http.js';

describe('metrics endpoint', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it('serves every listed metric over HTTP with the node label', async () => {
    const m = createNodeMetrics({ nodeId: 'n1' }, { defaultMetrics: false });
    m.raftTerm.set(3);
    m.fireLateness.observe(0.012);
    m.runsByState.set({ state: 'RUNNING' }, 4);
    m.storeMemory.set({ store: 'fsm' }, 1234);
    const srv = await startMetricsServer(m.registry, '127.0.0.1', 0);
    close = srv.close;
    const res = await fetch(`http://127.0.0.1:${srv.port}/metrics`);
    expect(res.status).toBe(200);
    const body = await res.text();
    for (const name of [
      'herald_raft_term',
      'herald_raft_commit_index',
      'herald_raft_applied_index',
      'herald_raft_leader_changes_total',
      'herald_raft_proposals_total',
      'herald_raft_proposal_latency_seconds',
      'herald_runs',
      'herald_fire_lateness_seconds',
      'herald_lease_expiries_total',
      'herald_workers_connected',
      'herald_missed_slots_total',
      'herald_store_memory_bytes',
    ]) {
      expect(body).toContain(`# TYPE ${name} `);
    }
    expect(body).toContain('herald_raft_term{node="n1"} 3');
    expect(body).toContain('herald_runs{state="RUNNING",node="n1"} 4');
    expect(body).toContain('herald_store_memory_bytes{store="fsm",node="n1"} 1234');
    expect(body).toMatch(/herald_fire_lateness_seconds_bucket\{le="0.025",node="n1"\} 1/);
    const missing = await fetch(`http://127.0.0.1:${srv.port}/other`);
    expect(missing.status).toBe(404);
  });

  it('with a token file, refuses a scrape without the token or with another, and reads the file per scrape (rotation)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-metrics-token-'));
    const file = join(dir, 'metrics.token');
    writeFileSync(file, 'first-token\n');
    const m = createNodeMetrics({ nodeId: 'n1' }, { defaultMetrics: false });
    const srv = await startMetricsServer(m.registry, '127.0.0.1', 0, { tokenFile: file });
    close = async () => {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    };
    const scrape = (token?: string) => fetch(`http://127.0.0.1:${srv.port}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    const none = await scrape();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await none.text()).toMatch(/--metrics-token-file/);
    expect((await scrape('wrong')).status).toBe(401);
    const ok = await scrape('first-token');
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('# TYPE herald_raft_term ');
    writeFileSync(file, 'second-token\n');
    expect((await scrape('first-token')).status).toBe(401);
    expect((await scrape('second-token')).status).toBe(200);
    // An empty or missing file refuses everyone rather than opening up.
    writeFileSync(file, '');
    expect((await scrape('')).status).toBe(401);
    rmSync(file);
    expect((await scrape('second-token')).status).toBe(401);
  });
});
