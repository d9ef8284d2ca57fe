import type { Command } from 'commander';
import type { JobStateName, Page } from '../../client/herald-client.js';
import type { Job } from '../../gen/herald/v1/job.js';
import { addClientOptions, type ClientFlags } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { parseDuration } from '../../client/duration.js';
import { EXIT } from '../exit-codes.js';
import { hasSpecFlags, parseLabels, specForCreate, specForUpdate, type JobSpecFlags } from '../job-spec-flags.js';
import { renderFields, renderTable } from '../output/table.js';
import { JOB_HEADERS, jobFields, jobJson, jobRow } from '../output/job-view.js';
import { runJson, runState } from '../output/run-view.js';
import { waitForRun } from '../wait-for-run.js';
import { parseInstant } from '../parse-instant.js';
import { UsageError } from '../usage-error.js';
import { print, printJson } from '../output/print.js';
import { collectLimited, parseLimit } from '../paging.js';
import { registerJobNext } from './job-next.js';
import type { JobDocCodec } from '../job-doc/job-doc-codec.js';
import { parseOutputFormat } from '../job-doc/output-format.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

function addSpecOptions(cmd: Command): Command {
  return cmd
    .option('--task-type <type>', 'task type workers subscribe to (e.g. demo)')
    .option('--cron <expr>', 'cron expression, 5 fields or 6 with seconds first, e.g. "*/10 * * * * *"')
    .option('--tz <zone>', 'IANA time zone for --cron (default UTC), e.g. Europe/Berlin')
    .option('--every <duration>', 'fixed interval, e.g. 5s, 1h30m')
    .option('--at <instant>', 'one-off: ISO 8601 with zone, epoch ms, or relative like +30s')
    .option('--payload <json|@file>', 'payload: inline JSON, or @path to send a file as it is')
    .option('--start <instant>', 'no slot before this instant')
    .option('--end <instant>', 'no slot at or after this instant')
    .option('--max-attempts <n>', 'attempts per run including the first')
    .option('--backoff <duration>', 'backoff before the first retry (grows per attempt)')
    .option('--overlap <policy>', 'allow | forbid | buffer-one | replace')
    .option('--misfire <policy>', 'skip | run-once | run-all (after downtime)')
    .option('--starting-deadline <duration>', 'a slot not started within this is recorded MISSED')
    .option('--jitter <duration>', 'spread each slot by a stable offset within this window')
    .option('--exec-timeout <duration>', 'abort an attempt after this long')
    .option('--timeout-ms <ms>', 'same as --exec-timeout, in milliseconds')
    .option('--lease <duration>', 'lease of a claimed run (renewed by heartbeats)')
    .option('--label <key=value>', 'label (repeatable)', collect)
    .option('--priority <n>', '-1000..1000; higher is dispatched first')
    .option('--max-pending-runs <n>', 'most runs pending or running at once; later slots are recorded MISSED (default 100, at most 10000)')
    .option('--anchor <instant>', 'for --every: the first slot (default: --start, else the creation time)')
    .option('--max-backoff <duration>', 'upper bound of any retry backoff')
    .option('--backoff-multiplier <x>', 'growth of the backoff per attempt (>= 1, default 2)')
    .option('--non-retryable <type>', 'an error type that goes DEAD at once, not retried (repeatable or comma-separated; replaces the list)', collect)
    .option('--misfire-max-runs <n>', 'for --misfire run-all: the most catch-up runs per recovery')
    .option('--dst-gap <policy>', 'cron local times skipped by DST: shift-forward | skip')
    .option('--dst-fold <policy>', 'cron local times repeated by DST: auto | first | last | both')
    .option('--retention-max-runs <n>', 'finished runs kept (default 100)')
    .option('--retention-max-age <duration>', 'finished runs older than this are trimmed (default 7d)')
    .option('--max-concurrent <n>', 'most runs of the job RUNNING at once; more wait PENDING (0 = no limit, at most 10000)')
    .option('--alert-on-failure <task-type>', 'an alert run of this task type for every failed attempt that will be retried ("" removes it)')
    .option('--alert-on-dead <task-type>', 'an alert run of this task type for every run that goes DEAD (e.g. alerts; see herald worker --webhook)')
    .option('--alert-on-missed <task-type>', 'an alert run of this task type for every slot recorded MISSED')
    .option('--alert-on-watchdog <task-type>', "an alert run of this task type when the leader's watchdog finds a due slot not fired")
    .option('--pause-after-dead <n>', 'pause the job after n consecutive DEAD runs (a success resets the count; 0 = never)');
}

type JobFlags = ClientFlags & JobSpecFlags;

/** The job document codec, loaded on demand: only -o yaml|json needs the proto descriptor. */
async function jobDocCodec(): Promise<JobDocCodec> {
  const { loadJobSpecDescriptor } = await import('../job-doc/job-spec-descriptor.js');
  const { JobDocCodec } = await import('../job-doc/job-doc-codec.js');
  return new JobDocCodec(loadJobSpecDescriptor());
}

function showJob(job: Job, json: boolean | undefined, extra: Record<string, unknown> = {}): void {
  if (json) printJson({ ...jobJson(job), ...extra });
  else print(renderFields(jobFields(job)));
}

export function registerJobCommands(program: Command): void {
  const job = program.command('job').description('create, inspect and control jobs');

  addClientOptions(addSpecOptions(job.command('create').description('create a job')))
    .option('--id <id>', 'job id (default: generated by the server)')
    .option('--idempotency-key <key>', 'makes retries of this exact create safe (returns the first job)')
    .action(
      commandAction('job create', (cmd) =>
        withClient(cmd, async (client) => {
          const f = cmd.opts() as JobFlags & { id?: string; idempotencyKey?: string };
          const spec = specForCreate(f);
          const { job: created, created: isNew } = await client.createJob(spec, {
            ...(f.id !== undefined ? { id: f.id } : {}),
            ...(f.idempotencyKey !== undefined ? { idempotencyKey: f.idempotencyKey } : {}),
          });
          if (f.json) printJson({ ...jobJson(created), created: isNew });
          else {
            print(isNew ? `created job ${created.id}\n` : `job ${created.id} already created by an earlier call with this idempotency key\n`);
            print(renderFields(jobFields(created)));
          }
        }),
      ),
    );

  addClientOptions(job.command('get <id>').description('show one job'))
    .option('--stale', 'read the answering replica (may lag) instead of the leader')
    .option('-o, --output <format>', 'table | yaml | json: yaml and json are job documents, as `herald apply -f` reads them', 'table')
    .action(
      commandAction('job get', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const o = cmd.opts() as { stale?: boolean; output: string };
          const format = parseOutputFormat(o.output);
          const found = await client.getJob(id, o.stale ? { consistency: 'stale' } : {});
          if (format === 'table') showJob(found, flags.json);
          else {
            const { formatDocument } = await import('../job-doc/job-doc-file.js');
            print(formatDocument((await jobDocCodec()).jobToDoc(found), format));
          }
        }),
      ),
    );

  addClientOptions(job.command('ls').description('list jobs'))
    .option('--state <state>', 'active | paused | completed')
    .option('--task-type <type>', 'only jobs of this task type')
    .option('--label <key=value>', 'only jobs with this label (repeatable)', collect)
    .option('--prefix <id-prefix>', 'only jobs whose id starts with this')
    .option('--limit <n>', 'show at most n jobs (0 = all)', '100')
    .option('-o, --output <format>', 'table | yaml | json: yaml and json are job documents, as `herald apply -f` reads them', 'table')
    .action(
      commandAction('job ls', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const o = cmd.opts() as { state?: string; taskType?: string; label?: string[]; prefix?: string; limit: string; output: string };
          const format = parseOutputFormat(o.output);
          if (o.state !== undefined && !['active', 'paused', 'completed'].includes(o.state)) {
            throw new UsageError(`--state: unknown state "${o.state}" (use active, paused or completed)`);
          }
          const limit = parseLimit(o.limit);
          const filter = {
            ...(o.state !== undefined ? { state: o.state as JobStateName } : {}),
            ...(o.taskType !== undefined ? { taskType: o.taskType } : {}),
            ...(o.label ? { labels: parseLabels(o.label) } : {}),
            ...(o.prefix !== undefined ? { idPrefix: o.prefix } : {}),
          };
          const { items, more } = await collectLimited<Job>(limit, (pageToken, pageSize) =>
            client.listJobs({ ...filter, pageToken, pageSize }) as Promise<Page<Job>>,
          );
          if (format !== 'table') {
            const codec = await jobDocCodec();
            const { formatDocuments } = await import('../job-doc/job-doc-file.js');
            print(formatDocuments(items.map((j) => codec.jobToDoc(j)), format));
            if (more) process.stderr.write(`(wrote the first ${items.length}; use --limit 0 for all)\n`);
          } else if (flags.json) printJson({ jobs: items.map(jobJson), more });
          else {
            const now = Date.now();
            print(items.length === 0 ? 'no jobs\n' : renderTable(JOB_HEADERS, items.map((j) => jobRow(j, now))));
            if (more) process.stderr.write(`(showing the first ${items.length}; use --limit 0 for all)\n`);
          }
        }),
      ),
    );

  addClientOptions(addSpecOptions(job.command('update <id>').description('change fields of a job in place (the flags given replace the stored values)')))
    .option('--expected-version <n>', 'apply only if the job is still at this version (default: the version just read)')
    .action(
      commandAction('job update', (cmd) =>
        withClient(cmd, async (client) => {
          const [id] = cmd.processedArgs as [string];
          const f = cmd.opts() as JobFlags & { expectedVersion?: string };
          if (!hasSpecFlags(f)) throw new UsageError('nothing to change: give at least one spec flag (see herald job update --help)');
          const current = await client.getJob(id);
          const expectedVersion = f.expectedVersion === undefined ? current.version : parseVersion(f.expectedVersion);
          const updated = await client.updateJob(id, specForUpdate(f, current.spec!), { expectedVersion });
          if (!f.json) print(`updated job ${updated.id} (version ${current.version} → ${updated.version})\n`);
          showJob(updated, f.json);
        }),
      ),
    );

  addClientOptions(job.command('pause <id>').description('pause a job: no slot fires until it is resumed'))
    .option('--note <text>', 'why (shown by job get)')
    .action(
      commandAction('job pause', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const paused = await client.pauseJob(id, (cmd.opts() as { note?: string }).note ?? '');
          if (!flags.json) print(`paused job ${paused.id}\n`);
          else showJob(paused, true);
        }),
      ),
    );

  addClientOptions(job.command('resume <id>').description('resume a paused job with its next future slot')).action(
    commandAction('job resume', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [id] = cmd.processedArgs as [string];
        const resumed = await client.resumeJob(id);
        if (!flags.json) print(`resumed job ${resumed.id}; next fire ${jobFields(resumed).find(([k]) => k === 'next fire')![1]}\n`);
        else showJob(resumed, true);
      }),
    ),
  );

  addClientOptions(job.command('trigger <id>').description('start a manual run now, outside the schedule'))
    .option('--idempotency-key <key>', 'a retry with the same key returns the first run')
    .option('--ignore-overlap', "run now even if the job's overlap policy forbids it (FORBID, BUFFER_ONE, REPLACE)")
    .option('--wait', 'wait for the run to finish; exit 7 unless it succeeded')
    .option('--wait-timeout <duration>', 'give up waiting after this long (exit 5)', '60s')
    .action(
      commandAction('job trigger', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const o = cmd.opts() as { idempotencyKey?: string; ignoreOverlap?: boolean; wait?: boolean; waitTimeout: string };
          const waitMs = parseDuration(o.waitTimeout, '--wait-timeout');
          const ignoreOverlap = o.ignoreOverlap === true;
          let run = await client.triggerJob(id, o.idempotencyKey !== undefined ? { idempotencyKey: o.idempotencyKey, ignoreOverlap } : { ignoreOverlap });
          if (!flags.json) print(`triggered run ${run.id} of job ${id}\n`);
          if (!o.wait) {
            if (flags.json) printJson(runJson(run));
            return;
          }
          run = await waitForRun(client, run, waitMs);
          if (flags.json) printJson(runJson(run));
          else print(`run ${run.id} ${runState(run)}${run.reason ? ` (${run.reason})` : ''}\n`);
          return runState(run) === 'succeeded' ? EXIT.ok : EXIT.runFailed;
        }),
      ),
    );

  addClientOptions(job.command('backfill <id>').description("create runs for the schedule's slots in a past range [from, to)"))
    .requiredOption('--from <instant>', 'first instant (inclusive): ISO 8601 with zone, epoch ms, or relative like "2h ago"')
    .option('--to <instant>', 'end (exclusive, not in the future)', 'now')
    .option('--max-runs <n>', 'fail instead of creating more runs than this (1..10000)', '1000')
    .option('--ignore-overlap', 'start the runs together even under FORBID / BUFFER_ONE (they queue otherwise)')
    .action(
      commandAction('job backfill', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const o = cmd.opts() as { from: string; to: string; maxRuns: string; ignoreOverlap?: boolean };
          const now = Date.now();
          const from = parseInstant(o.from, '--from', now);
          const to = parseInstant(o.to, '--to', now);
          if (to <= from) throw new UsageError('--to must be after --from');
          const maxRuns = Number(o.maxRuns);
          if (!Number.isInteger(maxRuns) || maxRuns < 1 || maxRuns > 10_000) throw new UsageError(`--max-runs: expected 1..10000, got "${o.maxRuns}"`);
          const runIds = await client.backfillJob(id, { from, to, maxRuns, ignoreOverlap: o.ignoreOverlap === true });
          if (flags.json) printJson({ jobId: id, runIds });
          else print(`backfilled ${runIds.length} run(s) of job ${id}\n${runIds.map((r) => `  ${r}\n`).join('')}`);
        }),
      ),
    );

  addClientOptions(job.command('rm <id>').description('delete a job: pending runs are cancelled, running ones are told to stop'))
    .option('--expected-version <n>', 'delete only if the job is at this version')
    .action(
      commandAction('job rm', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const o = cmd.opts() as { expectedVersion?: string };
          const res = await client.deleteJob(id, o.expectedVersion === undefined ? {} : { expectedVersion: parseVersion(o.expectedVersion) });
          if (flags.json) printJson({ jobId: id, deleted: true, cancelledRuns: res.cancelledRuns });
          else print(`deleted job ${id}${res.cancelledRuns ? ` (${res.cancelledRuns} run(s) cancelled)` : ''}\n`);
        }),
      ),
    );

  registerJobNext(job);
}

function parseVersion(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`--expected-version: "${text}" is not a version (a whole number >= 1)`);
  return n;
}
