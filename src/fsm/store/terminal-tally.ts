// Each job's terminal runs as one apply transaction changes them, kept as putRun and deleteRun
// store each change (apply-txn.ts): the count the job record will carry is known after every
// command without walking its runs, so the hard retention bound (apply-run-bound.ts) costs a map
// update per run that ends and nothing per job under its bound.
import { SEP } from './key-layout.js';
import { isTerminal } from './records.js';

export class TerminalTally {
  /** Per job id: runs that became terminal (+) or left the store terminal (−) in the transaction. */
  private readonly delta = new Map<string, number>();
  /** Per job id: runs that became terminal since the last takeGained (the current command). */
  private gained: Map<string, number> | undefined;

  /** The run under `runKey` went from state `before` to `after` (−1: absent). */
  changed(runKey: string, before: number, after: number): void {
    const was = before >= 0 && isTerminal(before);
    const now = after >= 0 && isTerminal(after);
    if (was === now) return;
    // "r\0<jobId>\0...": the job id is the second component of the key.
    const jobId = runKey.slice(2, runKey.indexOf(SEP, 2));
    this.delta.set(jobId, (this.delta.get(jobId) ?? 0) + (now ? 1 : -1));
    if (now) {
      const g = (this.gained ??= new Map());
      g.set(jobId, (g.get(jobId) ?? 0) + 1);
    }
  }

  deltaOf(jobId: string): number {
    return this.delta.get(jobId) ?? 0;
  }

  /** Jobs that gained terminal runs since the last call, with how many, in the order they did. */
  takeGained(): Map<string, number> | undefined {
    const g = this.gained;
    this.gained = undefined;
    return g;
  }
}
