// The simulator's state machine: the key-value puts of kv-command.ts, kept in memory and written
// to the node's state-machine SimDisk (one image per batch: applied index, digest and data, so a
// batch lands whole or not at all, as one LevelDB batch does). It implements the same
// StateMachine contract as src/raft/kv, effects replication included, so the driver runs every
// path it runs in production.
//
// `digest` folds every applied entry (index and bytes) into 32 bits: replicas that applied the
// same entries up to an index hold the same digest there, which is what the checker compares.
//
// Write-behind (drawn per seed): apply returns once its batch is queued, like the LevelDB KV
// machine; a failed write then fails every later call. Otherwise apply waits for its write and
// changes nothing when it fails.

import type { Entry, SnapshotMeta } from '../types.js';
import type { EffectsReplication, SnapshotSource, StateMachine } from '../state-machine.js';
import { decodePut } from './kv-command.js';
import type { SimDisk } from './sim-disk.js';
import type { SimIo } from './sim-io.js';

export interface SmImage {
  readonly applied: number;
  readonly digest: number;
  readonly kv: ReadonlyMap<string, string>;
}

export const EMPTY_IMAGE: SmImage = { applied: 0, digest: 0, kv: new Map() };

const OK = new Uint8Array([1]);
const EMPTY = new Uint8Array(0);
const enc = new TextEncoder();
const dec = new TextDecoder();

interface Effects {
  from: number;
  to: number;
  digest: number;
  writes: Array<[string, string]>;
}

function fold(digest: number, e: Entry): number {
  let h = Math.imul(digest ^ e.index, 0x01000193) >>> 0;
  const d = e.data;
  for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i]!, 0x01000193) >>> 0;
  return h;
}

export function encodeImage(img: SmImage): Uint8Array {
  return enc.encode(JSON.stringify({ a: img.applied, d: img.digest, kv: [...img.kv] }));
}

export function decodeImage(data: Uint8Array): SmImage {
  const o = JSON.parse(dec.decode(data)) as { a: number; d: number; kv: Array<[string, string]> };
  return { applied: o.a, digest: o.d, kv: new Map(o.kv) };
}

export class SimKvMachine implements StateMachine, EffectsReplication {
  private img: SmImage;
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;
  private readonly decoded = new WeakMap<Uint8Array, Effects>();

  constructor(
    private readonly disk: SimDisk<SmImage>,
    private readonly io: SimIo,
    private readonly writeBehind: boolean,
    /** Each entry as it is evaluated (the state-machine-safety checker). */
    private readonly onApply: (e: Entry) => void,
  ) {
    io.read('state machine load');
    this.img = disk.read('sm') ?? EMPTY_IMAGE;
  }

  get effects(): EffectsReplication {
    return this;
  }

  get applied(): number {
    return this.img.applied;
  }

  get digest(): number {
    return this.img.digest;
  }

  /** A local read (what a linearizable read returns once its index is applied). */
  get(key: string): string {
    return this.img.kv.get(key) ?? '';
  }

  async appliedIndex(): Promise<number> {
    return this.img.applied;
  }

  async apply(entries: readonly Entry[]): Promise<Uint8Array[]> {
    return (await this.evaluate(entries, undefined)).results;
  }

  async applyCapturing(entries: readonly Entry[]): Promise<{ results: Uint8Array[]; effects: Uint8Array | undefined }> {
    const writes: Array<[string, string]> = [];
    const from = this.img.applied;
    const out = await this.evaluate(entries, writes);
    const fx: Effects = { from, to: this.img.applied, digest: this.img.digest, writes };
    const bytes = enc.encode(JSON.stringify(fx));
    this.decoded.set(bytes, fx);
    return { results: out.results, effects: bytes };
  }

  effectsRange(effects: Uint8Array): { fromApplied: number; toApplied: number } {
    const fx = this.decode(effects);
    return { fromApplied: fx.from, toApplied: fx.to };
  }

  async applyEffects(effects: Uint8Array): Promise<'applied' | 'stale' | 'gap'> {
    this.throwIfFailed();
    const fx = this.decode(effects);
    if (fx.from !== this.img.applied) return fx.from < this.img.applied ? 'stale' : 'gap';
    const kv = new Map(this.img.kv);
    for (const [k, v] of fx.writes) kv.set(k, v);
    await this.commit({ applied: fx.to, digest: fx.digest, kv });
    return 'applied';
  }

  private decode(effects: Uint8Array): Effects {
    let fx = this.decoded.get(effects);
    if (!fx) this.decoded.set(effects, (fx = JSON.parse(dec.decode(effects)) as Effects));
    return fx;
  }

  private async evaluate(entries: readonly Entry[], writes: Array<[string, string]> | undefined): Promise<{ results: Uint8Array[] }> {
    this.throwIfFailed();
    if (entries.length === 0) return { results: [] };
    const kv = new Map(this.img.kv);
    let digest = this.img.digest;
    const results: Uint8Array[] = [];
    for (const e of entries) {
      this.onApply(e);
      digest = fold(digest, e);
      if (e.type !== 'normal' || e.data.length === 0) {
        results.push(EMPTY);
        continue;
      }
      const cmd = decodePut(e.data);
      kv.set(cmd.key, cmd.value);
      writes?.push([cmd.key, cmd.value]);
      results.push(OK);
    }
    await this.commit({ applied: entries[entries.length - 1]!.index, digest, kv });
    return { results };
  }

  /** Writes a new image: at once in memory and queued (write-behind), or once written. */
  private async commit(next: SmImage): Promise<void> {
    if (!this.writeBehind) {
      await this.io.write('sm', 'state machine batch', () => this.disk.write('sm', next));
      this.img = next;
      return;
    }
    this.img = next;
    this.writes = this.writes.then(() =>
      this.io.write('sm', 'state machine batch', () => this.disk.write('sm', next)).catch((e: unknown) => {
        this.writeError ??= e as Error;
      }),
    );
  }

  private throwIfFailed(): void {
    if (this.writeError) throw this.writeError;
  }

  private async flushed(): Promise<void> {
    await this.writes;
    this.throwIfFailed();
  }

  async snapshot(): Promise<SnapshotSource> {
    await this.flushed();
    this.io.read('state machine snapshot');
    const img = this.img;
    return {
      appliedIndex: img.applied,
      chunks: async function* () {
        yield encodeImage(img);
      },
      close: async () => undefined,
    };
  }

  async restore(meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    await this.flushed();
    let data: Uint8Array | undefined;
    for await (const c of chunks) data = c;
    if (!data) throw new Error(`snapshot ${meta.index} has no data`);
    const img = decodeImage(data);
    if (img.applied !== meta.index) throw new Error(`snapshot data is at ${img.applied}, meta says ${meta.index}`);
    await this.io.write('sm', 'state machine restore', () => {
      this.disk.write('sm', img);
      this.disk.sync();
    });
    this.img = img;
  }

  async sync(): Promise<void> {
    await this.flushed();
    await this.io.write('sm', 'state machine sync', () => this.disk.sync());
  }

  async stateHash(): Promise<string> {
    return `${this.img.applied}:${this.img.digest}`;
  }

  async close(): Promise<void> {}
}
