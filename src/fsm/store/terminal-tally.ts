// Each job's terminal runs as one command changes them, kept as putRun and deleteRun store each
// change (apply-txn.ts). At the end of every command the transaction folds them into the job
// records (count and trim due time, ApplyTxn.foldRetention) exactly as a commit of that command
// alone would: the stored state is then the same however entries are grouped into apply calls
// (a batch-wide fold took the earliest finish of the whole batch, while a trim in a later command
// had already reset the due time the per-entry replicas kept). The hard retention bound
// (apply-run-bound.ts) reads the count after each command from here: a map update per run that
// ends or leaves, nothing per job whose runs do not.
import { SEP } from './key-layout.js';
import { isTerminal } from './records.js';

export class TerminalTally {
  /** Per job id: runs that became terminal (+) or left the store terminal (−) in the command. */
  private readonly delta = new Map<string, number>();
  /** Per run key: whether the run was terminal when the command began (runs whose terminality changed). */
  private readonly startedTerminal = new Map<string, boolean>();
  /** Per job id: runs that became terminal in the command (the hard bound's budget). */
  private readonly gained = new Map<string, number>();

  /** The run under `runKey` went from state `before` to `after` (−1: absent). */
  changed(runKey: string, before: number, after: number): void {
    const was = before >= 0 && isTerminal(before);
    const now = after >= 0 && isTerminal(after);
    if (was === now) return;
    if (!this.startedTerminal.has(runKey)) this.startedTerminal.set(runKey, was);
    const jobId = jobIdOfRunKey(runKey);
    this.delta.set(jobId, (this.delta.get(jobId) ?? 0) + (now ? 1 : -1));
    if (now) this.gained.set(jobId, (this.gained.get(jobId) ?? 0) + 1);
  }

  deltaOf(jobId: string): number {
    return this.delta.get(jobId) ?? 0;
  }

  /** Jobs that gained terminal runs in the command, with how many, in the order they did. */
  gainedJobs(): ReadonlyMap<string, number> {
    return this.gained;
  }

  /** Runs whose terminality changed in the command, with whether each was terminal at its start. */
  changedRuns(): ReadonlyMap<string, boolean> {
    return this.startedTerminal;
  }

  get empty(): boolean {
    return this.startedTerminal.size === 0;
  }

  /** The command's changes are folded: the next command starts from nothing. */
  clear(): void {
    this.delta.clear();
    this.startedTerminal.clear();
    this.gained.clear();
  }
}

/** "r\0<jobId>\0...": the job id is the second component of a run key. */
export function jobIdOfRunKey(runKey: string): string {
  return runKey.slice(2, runKey.indexOf(SEP, 2));
}
