import type { Command } from 'commander';
import { notYetAvailable } from '../not-yet.js';

export function registerRunCommands(program: Command): void {
  const run = program.command('run').description('inspect and cancel runs');
  run.command('ls').description('list runs').action(notYetAvailable('run ls'));
  run.command('get <id>').description('show one run').action(notYetAvailable('run get'));
  run.command('cancel <id>').description('cancel a run').action(notYetAvailable('run cancel'));
}
