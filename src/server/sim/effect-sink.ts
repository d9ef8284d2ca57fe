// The simulated workers' effects, kept the way an idempotent downstream keeps them: keyed by run
// id and fenced by token. The first effect of a run is applied; a later one with a larger token
// is a re-execution (the run ran again after its earlier holder lost the lease: applied again,
// idempotently, and checked against the run's history); one with a token not larger than the
// largest seen is stale and refused (a superseded holder writing late). Handler starts are
// recorded too, in true simulated time, for the "no run started before its slot" check.

export interface EffectRecord {
  token: number;
  workerId: string;
  atMs: number;
}

export class EffectSink {
  /** Applied effects per run, in order (tokens strictly growing). */
  readonly effects = new Map<string, EffectRecord[]>();
  /** Handler starts per run: (token, true ms). */
  readonly starts = new Map<string, Array<{ token: number; atMs: number; slotMs: number }>>();
  /** Results sent with success per run and token (the worker's own claim of success). */
  readonly successReports = new Set<string>();
  refusedStale = 0;
  /** Results sent with a token already superseded (late or rogue reports the server must refuse). */
  supersededReports = 0;
  /** Results acknowledged as accepted though a newer token of their run had been assigned before they were sent. */
  readonly staleAccepted: string[] = [];

  private readonly assignedMax = new Map<string, number>();

  /** A worker received an assignment of this token (its claim had committed). */
  assigned(runId: string, token: number): void {
    if (token > (this.assignedMax.get(runId) ?? 0)) this.assignedMax.set(runId, token);
  }

  maxAssigned(runId: string): number {
    return this.assignedMax.get(runId) ?? 0;
  }

  started(runId: string, token: number, atMs: number, slotMs: number): void {
    let s = this.starts.get(runId);
    if (!s) this.starts.set(runId, (s = []));
    s.push({ token, atMs, slotMs });
  }

  /** Writes a run's effect; false when refused as stale (the caller then reports a failure). */
  write(runId: string, token: number, workerId: string, atMs: number): boolean {
    let list = this.effects.get(runId);
    if (!list) this.effects.set(runId, (list = []));
    const last = list[list.length - 1];
    if (last && token <= last.token) {
      if (token < last.token) this.refusedStale++;
      return token === last.token; // the same execution repeating itself: idempotent
    }
    list.push({ token, workerId, atMs });
    return true;
  }

  reportedSuccess(runId: string, token: number): void {
    this.successReports.add(`${runId}#${token}`);
  }

  get effectCount(): number {
    return this.effects.size;
  }
}
