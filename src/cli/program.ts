import { Command, CommanderError } from 'commander';
import { registerServerCommand } from './commands/server.js';
import { registerDevCommand } from './commands/dev.js';
import { registerJobCommands } from './commands/job.js';
import { registerRunCommands } from './commands/run.js';
import { registerClusterCommands } from './commands/cluster.js';
import { registerWorkerCommand } from './commands/worker.js';
import { EXIT } from './exit-codes.js';

export function buildProgram(): Command {
  const program = new Command('herald')
    .description('Herald: a Raft-replicated distributed job scheduler (cron at scale)')
    .version('0.1.0')
    // Usage errors are one line, like every other error: "herald: error: ... (see --help)".
    .configureOutput({
      outputError: (str, write) => write(`herald: ${str.trim().replace(/^error: /, 'usage: ')} (run with --help for usage)\n`),
    })
    // Bad flags exit 2 (see exit-codes.ts), not commander's default 1; help and version exit 0.
    .exitOverride((err: CommanderError) => {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') process.exit(0);
      if (err.code === 'commander.executeSubCommandAsync') process.exit(err.exitCode);
      process.exit(EXIT.usage);
    });
  registerServerCommand(program);
  registerDevCommand(program);
  registerJobCommands(program);
  registerRunCommands(program);
  registerClusterCommands(program);
  registerWorkerCommand(program);
  return program;
}
