// `npm run sim -- [--system raft|scheduler] ...`: the Raft simulator (src/raft/sim/cli.ts, the
// default) or the scheduler simulator (scheduler-sim-cli.ts). The choice lives here because the
// Raft simulator must not import the server (the layering: src/server builds on src/raft).
const argv = process.argv;
const at = argv.indexOf('--system');
const system = at >= 0 ? argv[at + 1] : 'raft';
if (at >= 0) argv.splice(at, 2);
if (system === 'raft') await import('../../raft/sim/cli.js');
else if (system === 'scheduler') await import('./scheduler-sim-cli.js');
else {
  console.error(`--system must be raft or scheduler (got ${system})`);
  process.exitCode = 2;
}
