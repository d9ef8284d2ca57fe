// `npm run sim -- [--system raft|scheduler] ...`: the Raft simulator (src/raft/sim/cli.ts, the
// default) or the scheduler simulator (scheduler-sim-cli.ts). The choice lives here because the
// Raft simulator must not import the server (the layering: src/server builds on src/raft).
const USAGE = `usage:
  npm run sim -- [--system raft] --seeds N [--start-seed S] [--nodes 3|5] [--profile P] [--mutation M] [--no-membership]
  npm run sim -- [--system raft] --seed S [--nodes 3|5] --trace
  npm run sim -- --system scheduler --seeds N [--start-seed S] [--nodes 3|5] [--profile P] [--mutation M] [--chaos-units U] [--faults v1|v2|v3|v4]
  npm run sim -- --system scheduler --seed S [--nodes 3|5] [--chaos-units U] [--faults v1|v2|v3|v4] --trace
  npm run sim -- [--system raft|scheduler] --list-mutations
The last line printed is a JSON summary (src/raft/sim/cli.ts, src/server/sim/scheduler-sim-cli.ts).`;
const argv = process.argv;
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
// A bad flag or value is a usage error: one line and the usage, exit 2 (not a stack trace); a
// crash of the simulator itself still prints its stack.
process.on('uncaughtException', (e) => {
  if (e instanceof Error && e.name === 'SimUsageError') {
    console.error(`sim: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(e);
  process.exit(1);
});
const at = argv.indexOf('--system');
const system = at >= 0 ? argv[at + 1] : 'raft';
if (at >= 0) argv.splice(at, 2);
if (system === 'raft') await import('../../raft/sim/cli.js');
else if (system === 'scheduler') await import('./scheduler-sim-cli.js');
else {
  console.error(`--system must be raft or scheduler (got ${system})`);
  process.exitCode = 2;
}
