import { Command } from 'commander';
import { registerServerCommand } from './commands/server.js';
import { registerDevCommand } from './commands/dev.js';
import { registerJobCommands } from './commands/job.js';
import { registerRunCommands } from './commands/run.js';
import { registerClusterCommands } from './commands/cluster.js';
import { registerWorkerCommand } from './commands/worker.js';

export function buildProgram(): Command {
  const program = new Command('herald')
    .description('Herald: a Raft-replicated distributed job scheduler (cron at scale)')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)');
  registerServerCommand(program);
  registerDevCommand(program);
  registerJobCommands(program);
  registerRunCommands(program);
  registerClusterCommands(program);
  registerWorkerCommand(program);
  return program;
}
