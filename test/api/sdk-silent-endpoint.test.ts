// An endpoint the network swallows answers no SYN: the SDK's call must not hang on it until the
// connection attempt fails (seconds) but move to the next endpoint after its connect bound. The
// silent address is on a bridge this test makes, with the one link behind it down (root only).
import { afterEach, describe, expect, it } from 'vitest';
import { NetnsLab, netnsUnavailable } from '../../chaos/net/netns.js';
import { HeraldClient } from '../../src/client/herald-client.js';
import { startInProcessCluster, type InProcessCluster } from '../dispatch/helpers/in-process-cluster.js';

const unavailable = await netnsUnavailable();

describe('SDK: a silent endpoint', () => {
  let lab: NetnsLab | undefined;
  let c: InProcessCluster | undefined;
  let client: HeraldClient | undefined;
  afterEach(async () => {
    client?.close();
    await c?.stop();
    await lab?.destroy();
    client = c = lab = undefined;
  });

  it.skipIf(unavailable !== undefined)(`moves to the next endpoint after the connect bound${unavailable ? ` (skipped: ${unavailable})` : ''}`, { timeout: 30_000 }, async () => {
    lab = await NetnsLab.create(1);
    await lab.cut(0); // its address resolves to nobody: SYNs vanish
    c = await startInProcessCluster(1);
    client = new HeraldClient({ endpoints: [`${lab.address(0)}:7070`, ...c.endpoints], connectTimeoutMs: 300, discoveryTimeoutMs: 300, defaultDeadlineMs: 10_000 });
    const started = Date.now();
    const page = await client.listJobs();
    expect(page.items).toEqual([]);
    // The bound plus a discovery round, not the seconds an unanswered connect takes to fail.
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
