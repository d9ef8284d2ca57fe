// `npm run sim -- --seeds 2000 [--start-seed S] [--nodes 3|5] [--mutation NAME] [--no-membership]`
// (configuration changes and lost disks are drawn in a share of the seeds, sim-membership.ts;
// --no-membership runs the seeds as they ran before membership changes existed; --membership,
// the default, is accepted for the commands written when it was opt-in)
// `npm run sim -- --seed N [--nodes 3|5] --trace`
// `npm run sim -- --list-mutations`
// Runs simulation seeds and prints one JSON summary as the last line:
// { seeds, steps, faults, violations, seedsPerSecond, failingSeeds, crashes, ioErrors, options,
// membership (runs that drew configuration changes; changes made, refused, disks wiped), ... }.

import { ALL_MUTATIONS, type CoreMutation } from '../core/mutations.js';
import { ALL_DRIVER_MUTATIONS, type DriverMutation } from '../driver/mutations.js';
import { FAULT_PROFILES, type FaultProfile } from './fault-plan.js';
import { runSimulation } from './simulator.js';
import { SimUsageError } from './sim-usage-error.js';

interface Args {
  seeds: number;
  startSeed: number;
  nodes: Array<3 | 5>;
  seed?: number;
  trace: boolean;
  mutations: Set<CoreMutation>;
  driverMutations: Set<DriverMutation>;
  profile: FaultProfile;
  listMutations: boolean;
  membership: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { seeds: 100, startSeed: 1, nodes: [3, 5], trace: false, mutations: new Set(), driverMutations: new Set(), profile: 'random', listMutations: false, membership: true };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new SimUsageError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--seeds':
        a.seeds = Number(val());
        break;
      case '--start-seed':
        a.startSeed = Number(val());
        break;
      case '--seed':
        a.seed = Number(val());
        break;
      case '--nodes': {
        const n = Number(val());
        if (n !== 3 && n !== 5) throw new SimUsageError('--nodes must be 3 or 5');
        a.nodes = [n];
        break;
      }
      case '--profile': {
        const p = val();
        if (!FAULT_PROFILES.includes(p as FaultProfile)) throw new SimUsageError(`--profile must be one of ${FAULT_PROFILES.join(', ')}`);
        a.profile = p as FaultProfile;
        break;
      }
      case '--trace':
        a.trace = true;
        break;
      case '--membership':
        a.membership = true;
        break;
      case '--no-membership':
        a.membership = false;
        break;
      case '--mutation': {
        const m = val();
        if (ALL_MUTATIONS.includes(m as CoreMutation)) a.mutations.add(m as CoreMutation);
        else if (ALL_DRIVER_MUTATIONS.includes(m as DriverMutation)) a.driverMutations.add(m as DriverMutation);
        else throw new SimUsageError(`unknown mutation ${m}; one of ${[...ALL_MUTATIONS, ...ALL_DRIVER_MUTATIONS].join(', ')}`);
        break;
      }
      case '--list-mutations':
        a.listMutations = true;
        break;
      default:
        throw new SimUsageError(`unknown flag ${flag}`);
    }
  }
  if (!Number.isSafeInteger(a.seeds) || a.seeds < 0) throw new SimUsageError('--seeds must be a non-negative integer');
  return a;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.listMutations) {
    for (const m of [...ALL_MUTATIONS, ...ALL_DRIVER_MUTATIONS]) console.log(m);
    return;
  }
  const sim = { mutations: args.mutations, driverMutations: args.driverMutations, profile: args.profile, membership: args.membership ? ('draw' as const) : false as const };
  if (args.seed !== undefined) {
    let failed = 0;
    for (const nodes of args.nodes) {
      const r = await runSimulation({ seed: args.seed, nodes, trace: args.trace, ...sim });
      if (args.trace) {
        console.log(`# seed ${args.seed}, ${nodes} nodes, plan ${JSON.stringify(r.plan)}, runtime ${JSON.stringify(r.runtime)}`);
        for (const line of r.trace) console.log(line);
      }
      failed += r.violations.length > 0 ? 1 : 0;
      console.log(
        JSON.stringify({
          seed: args.seed,
          nodes,
          steps: r.steps,
          faults: r.faults,
          crashes: r.crashes,
          ioErrors: r.ioErrors,
          runtime: r.runtime,
          ops: r.ops,
          livenessTicks: r.livenessTicks,
          linearizability: r.linearizability,
          violations: r.violations,
        }),
      );
    }
    process.exitCode = failed > 0 ? 1 : 0;
    return;
  }
  const started = performance.now();
  let steps = 0;
  let faults = 0;
  let violations = 0;
  let runs = 0;
  let linearizabilityUnknown = 0;
  let maxLivenessTicks = 0;
  let sumLivenessTicks = 0;
  let liveRuns = 0;
  let crashes = 0;
  let ioErrors = 0;
  // How many runs drew each runtime option (every combination production can run with).
  const options = { applyWindow: 0, effects: 0, writeBehind: 0, snapshotByBytes: 0, compactionKeepZero: 0, ioErrorsOn: 0 };
  // Runs that drew configuration changes, and the changes made, refused and disks wiped in them.
  const membership = { runs: 0, changes: 0, refused: 0, wipes: 0 };
  const failingSeeds: Array<{ seed: number; nodes: number; kind: string }> = [];
  for (let s = args.startSeed; s < args.startSeed + args.seeds; s++) {
    for (const nodes of args.nodes) {
      const r = await runSimulation({ seed: s, nodes, ...sim });
      runs++;
      steps += r.steps;
      crashes += r.crashes;
      ioErrors += r.ioErrors;
      const rt = r.runtime;
      if (rt.followerApplyWindowMs > 0) options.applyWindow++;
      if (rt.replicateEffects) options.effects++;
      if (rt.writeBehind) options.writeBehind++;
      if (rt.snapshotBy === 'bytes') options.snapshotByBytes++;
      if ((rt.snapshotBy === 'bytes' ? rt.compactionKeepBytes : rt.compactionKeepEntries) === 0) options.compactionKeepZero++;
      if (rt.ioErrorRate > 0) options.ioErrorsOn++;
      if (r.membership.enabled) {
        membership.runs++;
        membership.changes += r.membership.changes;
        membership.refused += r.membership.refused;
        membership.wipes += r.membership.wipes;
      }
      if (r.linearizability === 'unknown') linearizabilityUnknown++;
      if (r.livenessTicks >= 0) {
        liveRuns++;
        sumLivenessTicks += r.livenessTicks;
        maxLivenessTicks = Math.max(maxLivenessTicks, r.livenessTicks);
      }
      faults += r.faults;
      if (r.violations.length > 0) {
        violations++;
        failingSeeds.push({ seed: s, nodes, kind: r.violations[0]!.kind });
        console.error(`seed ${s} (${nodes} nodes): ${r.violations[0]!.kind}: ${r.violations[0]!.detail}`);
      }
      // Long runs: a partial summary on stderr now and then (last seed done included).
      if (runs % 1000 === 0) console.error(`progress ${JSON.stringify({ ...summary(), lastSeed: s })}`);
    }
  }
  console.log(JSON.stringify(summary()));
  process.exitCode = violations > 0 ? 1 : 0;

  function summary() {
    const secs = (performance.now() - started) / 1000;
    return {
      seeds: runs,
      steps,
      faults,
      violations,
      seedsPerSecond: Math.round((runs / secs) * 10) / 10,
      failingSeeds,
      crashes,
      ioErrors,
      options,
      membership,
      linearizabilityUnknown,
      livenessTicks: { mean: liveRuns ? Math.round((sumLivenessTicks / liveRuns) * 10) / 10 : 0, max: maxLivenessTicks },
    };
  }
}

await main();
