// The simulated transport carries a snapshot as one packet of bytes (src/raft/sim/sim-transport.ts
// keeps one chunk); the scheduler state machine streams several (a header, then key/value
// chunks). This wrapper frames every chunk into one (length-prefixed) and splits it again on
// restore, so the real snapshot and restore code runs unchanged on both sides.
import type { EffectsReplication, ResultWanted, SnapshotSource, StateMachine } from '../../raft/state-machine.js';
import type { Entry, SnapshotMeta } from '../../raft/types.js';

export function frameChunks(chunks: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const c of chunks) size += 4 + c.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const c of chunks) {
    view.setUint32(at, c.length);
    out.set(c, at + 4);
    at += 4 + c.length;
  }
  return out;
}

export function* unframeChunks(data: Uint8Array): Generator<Uint8Array> {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  while (at < data.length) {
    const n = view.getUint32(at);
    yield data.subarray(at + 4, at + 4 + n);
    at += 4 + n;
  }
}

export class OneChunkSnapshots implements StateMachine {
  constructor(
    private readonly sm: StateMachine & { readonly effects: EffectsReplication },
    /** Sees every batch of entries before it applies (the simulation's record of job changes). */
    private readonly observe?: (entries: readonly Entry[]) => void,
  ) {}

  get effects(): EffectsReplication {
    const fx = this.sm.effects;
    const observe = this.observe;
    if (!observe) return fx;
    return {
      applyCapturing: (entries, wanted) => {
        observe(entries);
        return fx.applyCapturing(entries, wanted);
      },
      applyEffects: (effects) => fx.applyEffects(effects),
      effectsRange: (effects) => fx.effectsRange(effects),
    };
  }
  apply(entries: readonly Entry[], wanted?: ResultWanted): Promise<Uint8Array[]> {
    this.observe?.(entries);
    return this.sm.apply(entries, wanted);
  }
  appliedIndex(): Promise<number> {
    return this.sm.appliedIndex();
  }
  async snapshot(): Promise<SnapshotSource> {
    const src = await this.sm.snapshot();
    const chunks: Uint8Array[] = [];
    try {
      for await (const c of src.chunks()) chunks.push(c.slice());
    } finally {
      await src.close();
    }
    const data = frameChunks(chunks);
    return {
      appliedIndex: src.appliedIndex,
      chunks: async function* () {
        yield data;
      },
      close: async () => undefined,
    };
  }
  async restore(meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    const parts: Uint8Array[] = [];
    for await (const c of chunks) parts.push(...unframeChunks(c));
    await this.sm.restore(
      meta,
      (async function* () {
        yield* parts;
      })(),
    );
  }
  sync(): Promise<void> {
    return this.sm.sync();
  }
  stateHash(): Promise<string> {
    return this.sm.stateHash();
  }
  close(): Promise<void> {
    return this.sm.close();
  }
}
