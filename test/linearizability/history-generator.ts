// Test support: histories produced by a *sequential* execution observed concurrently. Each op
// gets a call and a return time from its client's timeline and a linearization point inside that
// interval; applying the ops to a plain Map in linearization-point order gives the outputs. Such a
// history is linearizable by construction, whatever the interleaving.

import type { KvInput, KvOperation, KvOutput } from '../../src/raft/linearizability/kv-model.js';
import type { Prng } from '../../src/raft/sim/prng.js';

export interface GeneratorOptions {
  clients: number;
  ops: number;
  keys: number;
  /** Fraction of write ops whose outcome is unknown (return = Infinity). */
  unknownRate?: number;
  /** Max op duration in ticks (longer = more overlap). */
  maxDuration?: number;
}

export function sequentialHistory(rng: Prng, o: GeneratorOptions): KvOperation[] {
  const maxDuration = o.maxDuration ?? 20;
  const free = new Array<number>(o.clients).fill(0);
  const lastWritten = new Map<string, string | null>();
  const planned: Array<{ op: KvOperation; lp: number; unknown: boolean; applies: boolean }> = [];
  for (let n = 0; n < o.ops; n++) {
    // The client that is free soonest issues next (ties by id): deterministic interleaving.
    let c = 0;
    for (let i = 1; i < o.clients; i++) if (free[i]! < free[c]!) c = i;
    const call = free[c]! + rng.int(0, 3);
    const ret = call + rng.int(1, maxDuration + 1);
    free[c] = ret + 1;
    const key = `k${rng.int(0, o.keys)}`;
    const value = `c${c}.${n};`;
    let input: KvInput;
    const roll = rng.int(0, 10);
    if (roll < 4) input = { kind: 'get', key };
    else if (roll < 6) input = { kind: 'put', key, value };
    else if (roll < 7) input = { kind: 'delete', key };
    else if (roll < 9) input = { kind: 'append', key, value };
    else input = { kind: 'cas', key, expected: rng.chance(0.7) ? (lastWritten.get(key) ?? null) : null, value };
    if (input.kind === 'put' || input.kind === 'cas') lastWritten.set(key, input.value);
    const unknown = input.kind !== 'get' && rng.chance(o.unknownRate ?? 0);
    planned.push({
      op: { clientId: c, input, call, return: unknown ? Infinity : ret },
      lp: call + rng.next() * (ret - call),
      unknown,
      applies: !unknown || rng.chance(0.5),
    });
  }
  const store = new Map<string, string>();
  for (const p of [...planned].sort((a, b) => a.lp - b.lp)) {
    if (!p.applies) continue;
    const output = apply(store, p.op.input);
    if (!p.unknown) p.op.output = output;
  }
  return planned.map((p) => p.op);
}

function apply(store: Map<string, string>, input: KvInput): KvOutput {
  const cur = store.get(input.key) ?? null;
  const set = (v: string | null): void => {
    if (v === null) store.delete(input.key);
    else store.set(input.key, v);
  };
  switch (input.kind) {
    case 'get':
      return { kind: 'get', value: cur };
    case 'put':
      set(input.value);
      return { kind: 'ack' };
    case 'delete':
      set(null);
      return { kind: 'ack' };
    case 'append':
      set((cur ?? '') + input.value);
      return { kind: 'ack' };
    case 'cas': {
      const ok = cur === input.expected;
      if (ok) set(input.value);
      return { kind: 'cas', ok };
    }
  }
}
