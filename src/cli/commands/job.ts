import type { Command } from 'commander';
import { notYetAvailable } from '../not-yet.js';

export function registerJobCommands(program: Command): void {
  const job = program.command('job').description('create, inspect and control jobs');
  job.command('create').description('create a job').action(notYetAvailable('job create'));
  job.command('get <id>').description('show one job').action(notYetAvailable('job get'));
  job.command('ls').description('list jobs').action(notYetAvailable('job ls'));
  job.command('update <id>').description('update a job in place').action(notYetAvailable('job update'));
  job.command('pause <id>').description('pause a job').action(notYetAvailable('job pause'));
  job.command('resume <id>').description('resume a paused job').action(notYetAvailable('job resume'));
  job.command('trigger <id>').description('run a job now').action(notYetAvailable('job trigger'));
  job.command('backfill <id>').description('create runs for a past time range').action(notYetAvailable('job backfill'));
  job.command('rm <id>').description('delete a job').action(notYetAvailable('job rm'));
}
