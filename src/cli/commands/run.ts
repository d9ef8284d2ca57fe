import type { Command } from 'commander';
import type { RunStateName } from '../../client/herald-client.js';
import { parseDuration } from '../../client/duration.js';
import type { Run } from '../../gen/herald/v1/run.js';
import { addClientOptions } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { EXIT } from '../exit-codes.js';
import { print, printJson } from '../output/print.js';
import { ATTEMPT_HEADERS, attemptRow, RUN_HEADERS, runFields, runJson, runRow, runState } from '../output/run-view.js';
import { renderFields, renderTable } from '../output/table.js';
import { collectLimited, parseLimit } from '../paging.js';
import { UsageError } from '../usage-error.js';
import { waitForRun } from '../wait-for-run.js';
import { registerRunRetry } from './run-retry.js';
import { watchRunsToStdout, type RunWatchFlags } from '../run-watch.js';

/** A repeatable option's values, in order. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

const RUN_STATES: RunStateName[] = ['pending', 'running', 'succeeded', 'failed', 'dead', 'cancelled', 'skipped', 'missed'];

export function registerRunCommands(program: Command): void {
  const run = program.command('run').description('inspect, cancel and re-drive runs');

  addClientOptions(run.command('ls').description('list runs (per job, newest slot first)'))
    .option('--job <id>', 'only runs of this job')
    .option('--state <state>', RUN_STATES.join(' | '))
    .option('--limit <n>', 'show at most n runs (0 = all)', '50')
    .action(
      commandAction('run ls', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const o = cmd.opts() as { job?: string; state?: string; limit: string };
          if (o.state !== undefined && !RUN_STATES.includes(o.state as RunStateName)) {
            throw new UsageError(`--state: unknown state "${o.state}" (use one of: ${RUN_STATES.join(', ')})`);
          }
          const limit = parseLimit(o.limit);
          const filter = {
            ...(o.job !== undefined ? { jobId: o.job } : {}),
            ...(o.state !== undefined ? { state: o.state as RunStateName } : {}),
          };
          const { items, more } = await collectLimited<Run>(limit, (pageToken, pageSize) => client.listRuns({ ...filter, pageToken, pageSize }));
          if (flags.json) printJson({ runs: items.map(runJson), more });
          else {
            print(items.length === 0 ? 'no runs\n' : renderTable(RUN_HEADERS, items.map(runRow)));
            if (more) process.stderr.write(`(showing the first ${items.length}; use --limit 0 for all)\n`);
          }
        }),
      ),
    );

  addClientOptions(run.command('get <id>').description('show one run and its attempts'))
    .option('--wait', 'wait until the run finishes; exit 7 unless it succeeded')
    .option('--wait-timeout <duration>', 'give up waiting after this long (exit 5)', '60s')
    .option('--stale', 'read the answering replica (may lag) instead of the leader')
    .action(
      commandAction('run get', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const o = cmd.opts() as { wait?: boolean; waitTimeout: string; stale?: boolean };
          let r = await client.getRun(id, o.stale ? { consistency: 'stale' } : {});
          if (o.wait) r = await waitForRun(client, r, parseDuration(o.waitTimeout, '--wait-timeout'));
          if (flags.json) printJson(runJson(r));
          else {
            print(renderFields(runFields(r)));
            if (r.attempts.length > 0) print('\n' + renderTable(ATTEMPT_HEADERS, r.attempts.map(attemptRow)));
          }
          if (o.wait && runState(r) !== 'succeeded') return EXIT.runFailed;
        }),
      ),
    );

  addClientOptions(run.command('watch').description('print run state changes as the cluster applies them, until Ctrl-C (resumes across leader changes)'))
    .option('--job <id>', 'only runs of this job')
    .option('--task-type <type>', 'only runs of this task type')
    .option('--label <key=value>', 'only runs of jobs with this label (repeatable)', collect)
    .option('--state <states>', `only changes into these states, comma-separated (${RUN_STATES.join(', ')})`)
    .option('--from-index <n>', 'changes applied after this index (as printed with #); default: from now')
    .action(
      commandAction('run watch', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const abort = new AbortController();
          const stop = (): void => abort.abort();
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
          try {
            await watchRunsToStdout(client, cmd.opts() as RunWatchFlags, Boolean(flags.json), abort.signal);
          } finally {
            process.off('SIGINT', stop);
            process.off('SIGTERM', stop);
          }
        }),
      ),
    );

  addClientOptions(run.command('cancel <id>').description('cancel a pending or running run (a running one is told to stop)'))
    .option('--reason <text>', 'recorded on the run')
    .action(
      commandAction('run cancel', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const r = await client.cancelRun(id, (cmd.opts() as { reason?: string }).reason ?? '');
          if (flags.json) printJson(runJson(r));
          else print(`run ${r.id} ${runState(r)}\n`);
        }),
      ),
    );

  registerRunRetry(run);
}
