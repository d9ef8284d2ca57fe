// `herald run retry`: re-drive one run by id, or every run of a job / task type in one state
// (dead by default) that ended in a time range, 500 per call until none are left.
import type { Command } from 'commander';
import type { RetryRunsFilter, RunStateName } from '../../client/herald-client.js';
import type { RetryRunsFailure } from '../../gen/herald/v1/job_service.js';
import { addClientOptions } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { EXIT } from '../exit-codes.js';
import { print, printJson } from '../output/print.js';
import { runJson, runState } from '../output/run-view.js';
import { parseInstant } from '../parse-instant.js';
import { parseLimit } from '../paging.js';
import { UsageError } from '../usage-error.js';

const RETRY_STATES: RunStateName[] = ['dead', 'cancelled', 'failed'];

interface RetryFlags {
  job?: string;
  taskType?: string;
  state?: string;
  since?: string;
  until?: string;
  limit: string;
  ignoreOverlap?: boolean;
}

export function registerRunRetry(run: Command): void {
  addClientOptions(
    run
      .command('retry [id]')
      .description('re-drive a dead, cancelled or failed run (a new attempt, retry budget restarted), or all such runs of --job / --task-type'),
  )
    .option('--job <id>', 'bulk: runs of this job')
    .option('--task-type <type>', 'bulk: runs of this task type')
    .option('--state <state>', `bulk: ${RETRY_STATES.join(' | ')}`, 'dead')
    .option('--since <instant>', 'bulk: only runs that ended at or after this (ISO 8601, epoch ms, "1h ago")')
    .option('--until <instant>', 'bulk: only runs that ended before this')
    .option('--limit <n>', 'bulk: re-drive at most n runs (0 = all)', '0')
    .option('--ignore-overlap', "start them whatever the job's overlap policy (else FORBID / BUFFER_ONE queue them)")
    .action(
      commandAction('run retry', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string | undefined];
          const o = cmd.opts() as RetryFlags;
          const bulk = o.job !== undefined || o.taskType !== undefined;
          if (id !== undefined && bulk) throw new UsageError('give a run id or --job / --task-type, not both');
          if (id !== undefined) {
            const r = await client.retryRun(id, { ignoreOverlap: o.ignoreOverlap === true });
            if (flags.json) printJson(runJson(r));
            else print(`run ${r.id} ${runState(r)} (re-driven ${r.redriveCount} time(s); the next attempt is ${r.attempt + 1})\n`);
            return;
          }
          if (!bulk) throw new UsageError('give a run id, or --job <id> and/or --task-type <type> for a bulk re-drive');
          if (!RETRY_STATES.includes(o.state as RunStateName)) {
            throw new UsageError(`--state: "${o.state}" runs cannot be re-driven (use one of: ${RETRY_STATES.join(', ')})`);
          }
          const limit = parseLimit(o.limit);
          const filter: RetryRunsFilter = {
            ...(o.job !== undefined ? { jobId: o.job } : {}),
            ...(o.taskType !== undefined ? { taskType: o.taskType } : {}),
            state: o.state as RunStateName,
            ...(o.since !== undefined ? { finishedFrom: parseInstant(o.since, '--since') } : {}),
            ...(o.until !== undefined ? { finishedTo: parseInstant(o.until, '--until') } : {}),
            ignoreOverlap: o.ignoreOverlap === true,
          };
          const runIds: string[] = [];
          const failures: RetryRunsFailure[] = [];
          let pageToken = '';
          let more = true;
          while (more && (limit === 0 || runIds.length < limit)) {
            const left = limit === 0 ? 0 : Math.min(500, limit - runIds.length);
            const res = await client.retryRuns({ ...filter, pageToken, maxRuns: left });
            runIds.push(...res.runIds);
            failures.push(...res.failures);
            more = res.more;
            pageToken = res.nextPageToken;
          }
          if (flags.json) printJson({ runIds, failures, more });
          else {
            print(`re-drove ${runIds.length} run(s)\n${runIds.map((r) => `  ${r}\n`).join('')}`);
            for (const f of failures) process.stderr.write(`not re-driven: ${f.runId}: ${f.message}\n`);
            if (more) process.stderr.write(`(stopped at --limit ${limit}; more runs match)\n`);
          }
          return failures.length > 0 ? EXIT.conflict : undefined;
        }),
      ),
    );
}
