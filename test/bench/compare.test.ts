// Smoke test of `npm run bench -- compare`, raft pair only and for a second per phase: ours and
// etcd both ran, and the reported ratios are ours / peer. Skipped only when the peer tools are
// absent here (etcd not installed, or the peers' npm packages not installed by a run of
// ../shared/peers/run-etcd.sh) — the test never installs anything. Not part of `npm test` (CI has
// no peers): run it with HERALD_PEERS_TEST=1 npx vitest run test/bench/compare.test.ts
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBench } from './helpers/run-bench.js';

const PEERS = join(import.meta.dirname, '..', '..', '..', 'shared', 'peers');
function etcdMissing(): string | undefined {
  if (!existsSync(join(PEERS, 'run-etcd.sh'))) return `${PEERS}/run-etcd.sh not found`;
  try {
    execFileSync('sh', ['-c', 'command -v etcd'], { stdio: 'ignore' });
  } catch {
    return 'etcd is not installed';
  }
  // run-etcd.sh runs from its copy under /tmp/peers/tool and would `npm ci` there if missing.
  if (!existsSync('/tmp/peers/tool/node_modules/etcd3')) return 'the peers npm packages are not installed';
  return undefined;
}
const missing = etcdMissing();

describe('bench compare (tiny)', () => {
  it.skipIf(missing !== undefined)(`raft-commit vs etcd: both run, ratios are ours / peer${missing ? ` (skipped: ${missing})` : ''}`, { timeout: 150_000 }, async () => {
    const r = await runBench('compare', ['--pairs', 'raft', '--rounds', '1', '--raft-seconds', '1', '--warmup-seconds', '0'], 140_000);
    expect(r.bench).toBe('compare');
    const raft = r.pairs.raft;
    expect(raft.errors).toEqual([]);
    expect(raft.roundsOk).toBe(1);
    for (const name of ['c64OpsPerSec', 'c64P50Ms', 'c64P99Ms', 'c1OpsPerSec', 'c1P50Ms', 'c1P99Ms']) {
      const m = raft.metrics[name];
      expect(m.ours).toBeGreaterThan(0);
      expect(m.peer).toBeGreaterThan(0);
      expect(m.ratio).toBeCloseTo(m.ours / m.peer, 1);
    }
    expect(raft.invariants).toEqual([{ oursErrors: 0, peerErrors: 0 }]);
  });
});
