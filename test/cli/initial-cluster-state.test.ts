// `herald server --initial-cluster-state`: a node whose data dir is empty never starts as a voter
// of a cluster that already runs (it lost its votes with its disk); it is told which command
// brings it back. A node with its data starts either way, keeping the incarnation chosen at its
// first start.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../../chaos/orchestrator/free-port.js';
import { isHeraldError } from '../../src/herald-error.js';
import { KvStateMachine } from '../../src/raft/kv/kv-state-machine.js';
import { LogStore } from '../../src/raft/storage/log-store.js';
import { createNode } from '../../src/server/node/create-node.js';
import { runCli } from './helpers/run-cli.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-ics-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const logger = pino({ level: 'silent' });
const members = [{ id: 'n1', peerAddress: '127.0.0.1:0', clientAddress: '127.0.0.1:0' }];

async function incarnationIn(dataDir: string): Promise<string | undefined> {
  const log = await LogStore.open(join(dataDir, 'raft'));
  try {
    return (await log.readIdentity())?.incarnation;
  } finally {
    await log.close();
  }
}

describe('herald server --initial-cluster-state', () => {
  it('existing + an empty data dir: exit 2, naming `herald cluster add`', async () => {
    const peer = await freePort();
    const client = await freePort();
    const r = await runCli([
      'server', '--state-machine', 'kv', '--id', 'n1', '--peers', `n1=127.0.0.1:${peer}/127.0.0.1:${client}`,
      '--data-dir', join(dir, 'wiped'), '--initial-cluster-state', 'existing',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('herald cluster add n1');
    expect(r.stdout).not.toContain('listening');
  });

  it('a node bootstrapped with new restarts with existing, under the incarnation of its first start', async () => {
    const dataDir = join(dir, 'n1');
    const open = (state: 'new' | 'existing') =>
      createNode({ id: 'n1', members, dataDir, stateMachine: (d) => KvStateMachine.open(d), logger, tickMs: 10, initialClusterState: state });
    await expect(open('existing')).rejects.toSatisfy((e: unknown) => isHeraldError(e, 'EMPTY_DATA_DIR'));
    const first = await open('new');
    await first.stop({ transfer: false, graceMs: 100 });
    const inc = await incarnationIn(dataDir);
    expect(inc).toMatch(/^[0-9a-f]{16}$/);
    const again = await open('existing');
    await again.stop({ transfer: false, graceMs: 100 });
    expect(await incarnationIn(dataDir)).toBe(inc);
  });
});
