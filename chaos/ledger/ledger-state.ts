/**
 * The chaos ledger's state: an idempotent, fenced sink, as a real downstream system would use
 * Herald's fencing tokens. Per run it keeps the highest token seen; a write with a lower token is
 * refused (stale), the first write at or above it is the run's effect, later ones are replays.
 * It also keeps every raw handler invocation, so checkers can count re-executions and causes.
 * An invocation registers its token too (a handler "opens a session" with its token before it
 * writes), so an older holder that wakes up after a newer one started is refused.
 *
 * The nemesis can arm a one-shot crash instruction: the next invocation (of one worker, or of
 * any) is answered "crash before your effect" or "crash after your effect, before your ack".
 */
export interface EffectRecord {
  runId: string;
  jobId: string;
  slotMs: number;
  fencingToken: number;
  attempt: number;
  workerId: string;
  /** Worker's wall clock when the handler started (ms). */
  startedMs: number;
  /** Ledger's wall clock when the write arrived. */
  receivedMs: number;
  /** The run's slot plus jitter, as the worker was told (optional). */
  scheduledMs?: number;
  /** Arrival order across all records (set by the ledger; receivedMs can tie). */
  seq?: number;
}

export type CrashMode = 'before-effect' | 'after-effect';

export type EffectVerdict = 'applied' | 'replay' | 'stale';

export interface LedgerSnapshot {
  invocations: EffectRecord[];
  effects: EffectRecord[];
  replays: EffectRecord[];
  staleRejected: EffectRecord[];
}

export class LedgerState {
  private readonly maxToken = new Map<string, number>();
  private readonly applied = new Set<string>();
  private readonly data: LedgerSnapshot = { invocations: [], effects: [], replays: [], staleRejected: [] };

  private readonly armed: Array<{ workerId: string | undefined; mode: CrashMode }> = [];
  private seq = 0;

  /** Records an invocation; answers the crash instruction armed for this worker, if any. */
  invoke(r: EffectRecord): CrashMode | undefined {
    r.seq = ++this.seq;
    this.data.invocations.push(r);
    this.maxToken.set(r.runId, Math.max(this.maxToken.get(r.runId) ?? 0, r.fencingToken));
    const i = this.armed.findIndex((a) => a.workerId === undefined || a.workerId === r.workerId);
    if (i < 0) return undefined;
    const [a] = this.armed.splice(i, 1);
    return a!.mode;
  }

  /** One-shot: the next invocation (by `workerId`, or by any worker) is told to crash. */
  arm(mode: CrashMode, workerId?: string): void {
    this.armed.push({ workerId, mode });
  }

  /** Disarms everything not yet delivered (heal). */
  disarm(): number {
    return this.armed.splice(0).length;
  }

  effect(r: EffectRecord): EffectVerdict {
    r.seq = ++this.seq;
    const max = this.maxToken.get(r.runId) ?? 0;
    if (r.fencingToken < max) {
      this.data.staleRejected.push(r);
      return 'stale';
    }
    this.maxToken.set(r.runId, r.fencingToken);
    if (this.applied.has(r.runId)) {
      this.data.replays.push(r);
      return 'replay';
    }
    this.applied.add(r.runId);
    this.data.effects.push(r);
    return 'applied';
  }

  snapshot(): LedgerSnapshot {
    return {
      invocations: [...this.data.invocations],
      effects: [...this.data.effects],
      replays: [...this.data.replays],
      staleRejected: [...this.data.staleRejected],
    };
  }
}

/** Parses and checks a record sent by a worker; throws a message for a 400 answer. */
export function parseEffectRecord(body: unknown, receivedMs: number): EffectRecord {
  const o = body as Record<string, unknown>;
  const str = (k: string) => {
    if (typeof o?.[k] !== 'string' || (o[k] as string).length === 0) throw new Error(`${k}: a non-empty string is required`);
    return o[k] as string;
  };
  const num = (k: string) => {
    if (typeof o?.[k] !== 'number' || !Number.isFinite(o[k])) throw new Error(`${k}: a number is required`);
    return o[k] as number;
  };
  return {
    runId: str('runId'),
    jobId: str('jobId'),
    slotMs: num('slotMs'),
    fencingToken: num('fencingToken'),
    attempt: num('attempt'),
    workerId: str('workerId'),
    startedMs: num('startedMs'),
    receivedMs,
    ...(typeof o.scheduledMs === 'number' && Number.isFinite(o.scheduledMs) ? { scheduledMs: o.scheduledMs } : {}),
  };
}
