import { Command, CommanderError } from 'commander';
import { registerApplyCommand } from './commands/apply.js';
import { registerDevCommand } from './commands/dev.js';
import { registerJobCommands } from './commands/job.js';
import { registerRunCommands } from './commands/run.js';
import { registerClusterCommands } from './commands/cluster.js';
import { registerWorkerCommand } from './commands/worker.js';
import { registerTaskTypeCommands } from './commands/task-type.js';
import { registerCertsCommands } from './commands/certs.js';
import { registerAuthCommands } from './commands/auth.js';
import { EXIT } from './exit-codes.js';

/** The subcommand named on the command line (the first non-option argument), if any. */
function subcommandOf(argv: readonly string[]): string | undefined {
  return argv.slice(2).find((a) => !a.startsWith('-'));
}

/**
 * Builds the `herald` program. The server command pulls in the whole node (Raft runtime, state
 * machine, LevelDB, metrics) and costs more to load than a client command spends on its call, so
 * it is loaded only when it can be used: for `herald server` itself and for the top-level help.
 */
export async function buildProgram(argv: readonly string[] = process.argv): Promise<Command> {
  const program = new Command('herald')
    .description('Herald: a Raft-replicated distributed job scheduler (cron at scale)')
    .version('0.1.0')
    // Usage errors are one line, like every other error: "herald: usage: ... (run with --help ...)".
    .configureOutput({
      outputError: (str, write) => write(`herald: ${str.trim().replace(/^error: /, 'usage: ')} (run with --help for usage)\n`),
    })
    // Bad flags exit 2 (see exit-codes.ts), not commander's default 1; help and version exit 0.
    .exitOverride((err: CommanderError) => {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') process.exit(0);
      process.exit(EXIT.usage);
    });
  const sub = subcommandOf(argv);
  if (sub === undefined || sub === 'server' || sub === 'help') {
    const { registerServerCommand } = await import('./commands/server.js');
    registerServerCommand(program);
  }
  registerDevCommand(program);
  registerJobCommands(program);
  registerApplyCommand(program);
  registerRunCommands(program);
  registerClusterCommands(program);
  registerTaskTypeCommands(program);
  registerWorkerCommand(program);
  registerCertsCommands(program);
  registerAuthCommands(program);
  return program;
}
