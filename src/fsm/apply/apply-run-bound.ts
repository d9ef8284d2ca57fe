// The hard bound on a job's stored history: max_runs plus hardRunSlack terminal runs, kept by
// apply itself. Trims are otherwise proposed by the leader's trimmer on a timer, beside fires that
// add runs every second; under CPU starvation the trimmer fell behind and one bench stored five
// times the bound (issue 30). After each command, a job whose runs that command ended puts it past
// the bound is trimmed in the same transaction, by the trim command's own code (apply-trim.ts).
// Deterministic: the count is the job record's as folded after the previous command plus this
// command's changes, checked per command, so however entries are grouped into apply calls every
// replica trims the same runs. O(1) per job whose runs ended (a count from the job record and the
// command's tally); only a job past the bound reads its history.
import { NOT_READ, type ApplyTxn } from '../store/apply-txn.js';
import { hardRunSlack, maxRunsOf } from '../store/retention.js';
import { trimJob } from './apply-trim.js';

export async function applyRunBound(txn: ApplyTxn, nowMs: number): Promise<void> {
  const gained = txn.terminalTally.gainedJobs();
  if (gained.size === 0) return;
  // A copy: the trims below change the tally.
  for (const [jobId, n] of [...gained]) {
    let rec = txn.loadedJob(jobId);
    if (rec === NOT_READ) rec = await txn.getJob(jobId);
    if (!rec) continue;
    const maxRuns = maxRunsOf(rec.job.spec);
    const slack = hardRunSlack(maxRuns);
    if (txn.terminalRunsOf(jobId)! <= maxRuns + slack) continue;
    // Down to max_runs, deleting at most what this command added plus the slack: a job at the
    // bound before the command gets back to max_runs, and one far past it (a store from before
    // the bound, a lowered max_runs) comes down over several commands, each a bounded apply.
    await trimJob(txn, rec, nowMs, n + slack);
  }
}
