// `herald job next <id> -n 10`: the job's next fire instants as the leader's timing wheel will
// fire them (after DST policy and jitter), in UTC and in the job's own zone.
import type { Command } from 'commander';
import { JobState, type Job } from '../../gen/herald/v1/job.js';
import type { UpcomingFire } from '../../gen/herald/v1/job_service.js';
import { addClientOptions } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { formatInstant } from '../output/format.js';
import { print, printJson } from '../output/print.js';
import { renderTable } from '../output/table.js';
import { UsageError } from '../usage-error.js';

const MAX_FIRES = 100;

/** The zone a job's slots are matched in: its cron zone, else UTC. */
export function jobZone(job: Job): string {
  const kind = job.spec?.schedule?.kind;
  return kind?.$case === 'cron' && kind.cron.timeZone !== '' ? kind.cron.timeZone : 'UTC';
}

/** "2026-10-25 02:30:00 GMT+2": wall time in `zone` with its offset, so both sides of a fold are told apart. */
export function formatInZone(ms: number, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'shortOffset',
  }).formatToParts(new Date(ms));
  const p = (t: Intl.DateTimeFormatPartTypes): string => parts.find((x) => x.type === t)?.value ?? '';
  return `${p('year')}-${p('month')}-${p('day')} ${p('hour')}:${p('minute')}:${p('second')} ${p('timeZoneName')}`;
}

export function registerJobNext(job: Command): void {
  addClientOptions(job.command('next <id>').description("show the job's next fire instants (after DST policy and jitter), in UTC and the job's zone"))
    .option('-n, --count <n>', `how many (1..${MAX_FIRES})`, '10')
    .action(
      commandAction('job next', (cmd) =>
        withClient(cmd, async (client, flags) => {
          const [id] = cmd.processedArgs as [string];
          const text = (cmd.opts() as { count: string }).count;
          const n = Number(text);
          if (!/^\d+$/.test(text) || n < 1 || n > MAX_FIRES) throw new UsageError(`-n: expected 1..${MAX_FIRES}, got "${text}"`);
          const { job: j, upcomingFires } = await client.getJobWithFires(id, n);
          const zone = jobZone(j);
          if (flags.json) {
            printJson({ jobId: j.id, timeZone: zone, fires: upcomingFires.map((f) => fireJson(f, zone)) });
            return;
          }
          if (upcomingFires.length === 0) {
            print(`job ${j.id} has no upcoming fires (${j.state === JobState.JOB_STATE_PAUSED ? 'paused' : 'no further slot'})\n`);
            return;
          }
          const jittered = upcomingFires.some((f) => f.scheduledUnixMs !== f.slotUnixMs);
          const headers = ['#', 'UTC', `local (${zone})`, ...(jittered ? ['SLOT (before jitter)'] : [])];
          const rows = upcomingFires.map((f, i) => [
            String(i + 1),
            formatInstant(f.scheduledUnixMs),
            formatInZone(f.scheduledUnixMs, zone),
            ...(jittered ? [formatInstant(f.slotUnixMs)] : []),
          ]);
          print(renderTable(headers, rows));
        }),
      ),
    );
}

function fireJson(f: UpcomingFire, zone: string): Record<string, unknown> {
  return {
    scheduledUnixMs: f.scheduledUnixMs,
    slotUnixMs: f.slotUnixMs,
    utc: new Date(f.scheduledUnixMs).toISOString(),
    local: formatInZone(f.scheduledUnixMs, zone),
  };
}
