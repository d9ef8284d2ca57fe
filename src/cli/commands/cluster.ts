import type { Command } from 'commander';
import { notYetAvailable } from '../not-yet.js';

export function registerClusterCommands(program: Command): void {
  const cluster = program.command('cluster').description('cluster status and leadership');
  cluster.command('status').description('show members, leader, terms and indexes').action(notYetAvailable('cluster status'));
  cluster.command('transfer [target]').description('transfer leadership').action(notYetAvailable('cluster transfer'));
}
