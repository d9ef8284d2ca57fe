import type { Command } from 'commander';
import { notYetAvailable } from '../not-yet.js';

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run a demo worker (echo, or a shell command per run)')
    .action(notYetAvailable('worker'));
}
