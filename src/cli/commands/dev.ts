import type { Command } from 'commander';
import { notYetAvailable } from '../not-yet.js';

export function registerDevCommand(program: Command): void {
  program
    .command('dev')
    .description('run a local 3-node cluster and a demo worker (data in ./.herald)')
    .option('--data-dir <dir>', 'data directory', './.herald')
    .action(notYetAvailable('dev'));
}
