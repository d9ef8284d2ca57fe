// Each node's state for the convergence check, without a server hook: once the applied indexes
// agree, every node is frozen (SIGSTOP) at once, its state machine's LevelDB directory copied,
// and the nodes resumed; each copy is then opened (LevelDB replays its write-ahead log, so the
// copy holds everything the frozen process had written) and hashed over every key and value.
// Equal hashes include the applied-index key, so they mean "same index, same state". A write
// racing the freeze shows as unequal hashes: the collection is retried a few times.
// (A GetStatus field with the state machine's own stateHash() at its applied index would make
// this a single RPC; see the report's notes.)
import { createHash } from 'node:crypto';
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import type { ClusterProcesses } from './cluster-processes.js';
import type { NodeState } from '../checkers/convergence-checker.js';
import { sleep } from './free-port.js';

export async function hashLevelDir(dir: string): Promise<string> {
  const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  try {
    const h = createHash('sha256');
    const len = Buffer.alloc(4);
    for await (const [k, v] of db.iterator()) {
      len.writeUInt32BE(k.length);
      h.update(len).update(k);
      len.writeUInt32BE(v.length);
      h.update(len).update(v);
    }
    return h.digest('hex');
  } finally {
    await db.close();
  }
}

/** Polls until every running node of `ids` answers with the same applied index (or the timeout passes). */
export async function waitAppliedEqual(cluster: ClusterProcesses, timeoutMs: number, ids: readonly string[] = cluster.ids): Promise<Map<string, number>> {
  const end = Date.now() + timeoutMs;
  let last = new Map<string, number>();
  for (;;) {
    const st = new Map([...(await cluster.statuses(2_000))].filter(([id]) => ids.includes(id)));
    last = new Map([...st].map(([id, s]) => [id, s.appliedIndex]));
    const up = ids.filter((id) => cluster.isUp(id)).length;
    if (st.size === up && new Set(last.values()).size === 1) return last;
    if (Date.now() > end) return last;
    await sleep(200);
  }
}

/** The state of each node of `opts.ids` (default: every machine in service). */
export async function collectNodeStates(cluster: ClusterProcesses, scratch: string, opts: { attempts?: number; timeoutMs?: number; ids?: readonly string[] } = {}): Promise<NodeState[]> {
  const members = opts.ids ?? cluster.ids;
  let states: NodeState[] = [];
  let lastApplied = '';
  for (let attempt = 1; attempt <= (opts.attempts ?? 5); attempt++) {
    const applied = await waitAppliedEqual(cluster, opts.timeoutMs ?? 20_000, members);
    const ids = members.filter((id) => cluster.isUp(id));
    const copies = new Map<string, string>();
    for (const id of ids) cluster.pause(id);
    try {
      for (const id of ids) {
        const dst = join(scratch, `state-${id}-${attempt}`);
        await cp(join(cluster.node(id).dataDir, 'sm'), dst, { recursive: true });
        copies.set(id, dst);
      }
    } finally {
      for (const id of ids) cluster.resume(id);
    }
    states = [];
    for (const id of members) {
      const dir = copies.get(id);
      let stateHash: string | undefined;
      if (dir) {
        try {
          stateHash = await hashLevelDir(dir);
        } catch {
          stateHash = undefined;
        }
        await rm(dir, { recursive: true, force: true });
      }
      states.push({ id, appliedIndex: applied.get(id) ?? -1, stateHash });
    }
    if (states.every((s) => s.stateHash !== undefined && s.stateHash === states[0]!.stateHash)) return states;
    // Applied indexes still apart and not one of them moved since the last attempt's wait: a
    // stuck node is a finding, not a race; waiting again would only repeat the timeout.
    const key = [...applied].sort().join(',');
    if (new Set(applied.values()).size > 1 && key === lastApplied) return states;
    lastApplied = key;
    await sleep(500);
  }
  return states;
}
