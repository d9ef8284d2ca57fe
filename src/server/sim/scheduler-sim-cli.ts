// `npm run sim -- --system scheduler --seeds N [--start-seed S] [--nodes 3|5] [--profile P] [--mutation M]`
// `npm run sim -- --system scheduler --seed S [--nodes 3|5] [--chaos-units U] [--faults v1] --trace`
// `npm run sim -- --system scheduler --list-mutations`
// Runs scheduler simulation seeds (sched-simulator.ts) and prints one JSON summary as the last
// line: { seeds, steps, faults, violations, seedsPerSecond, simulatedPerWallSecond, failingSeeds,
// slotsChecked, runsChecked, effects, reExecutions, controlOps, linearizabilityUnchecked,
// featureLevelNotRaised (runs ending with a replica below this build's feature level), mutationsCaught }.
import { SUPPORTED_FEATURE_LEVEL } from '../../fsm/commands/feature-levels.js';
import { FAULT_PROFILES, type FaultProfile } from '../../raft/sim/fault-plan.js';
import { isSchedMutation, SCHED_MUTATIONS, type SchedMutation } from './sched-mutations.js';
import { runSchedulerSimulation, type FaultSet } from './sched-simulator.js';
import { SimUsageError } from '../../raft/sim/sim-usage-error.js';

interface Args {
  seeds: number;
  startSeed: number;
  nodes: Array<3 | 5>;
  seed?: number;
  trace: boolean;
  profile: FaultProfile;
  mutations: Set<SchedMutation>;
  listMutations: boolean;
  /** Length of the chaos phase in units (the tests' short runs use 500). */
  chaosUnits?: number;
  faults?: FaultSet;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { seeds: 100, startSeed: 1, nodes: [3, 5], trace: false, profile: 'random', mutations: new Set(), listMutations: false };
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
      case '--faults': {
        const f = val();
        if (f !== 'v1' && f !== 'v2' && f !== 'v3' && f !== 'v4') {
          throw new SimUsageError(`--faults is v1 (before worker cut-offs and the control-plane client), v2 (before store faults, backfills, cancels and reads), v3 (the default) or v4 (v3, and backfills of jobs whose retention trims)`);
        }
        a.faults = f;
        break;
      }
      case '--chaos-units':
        a.chaosUnits = Number(val());
        break;
      case '--trace':
        a.trace = true;
        break;
      case '--mutation': {
        const m = val();
        if (!isSchedMutation(m)) throw new SimUsageError(`unknown scheduler mutation ${m}; one of ${SCHED_MUTATIONS.join(', ')}`);
        a.mutations.add(m);
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
    for (const m of SCHED_MUTATIONS) console.log(m);
    return;
  }
  const sim = { profile: args.profile, mutations: args.mutations, chaosUnits: args.chaosUnits, faults: args.faults };
  if (args.seed !== undefined) {
    let failed = 0;
    for (const nodes of args.nodes) {
      const r = await runSchedulerSimulation({ seed: args.seed, nodes, trace: args.trace, ...sim });
      if (args.trace) {
        console.log(`# seed ${args.seed}, ${nodes} nodes, plan ${JSON.stringify(r.plan)}`);
        for (const line of r.trace) console.log(line);
      }
      failed += r.violations.length > 0 ? 1 : 0;
      const { trace: _t, plan: _p, ...rest } = r;
      console.log(JSON.stringify(rest));
    }
    process.exitCode = failed > 0 ? 1 : 0;
    return;
  }
  const started = performance.now();
  const t = { runs: 0, steps: 0, faults: 0, violations: 0, simulatedMs: 0, slotsChecked: 0, trimmedSlots: 0, runsChecked: 0, effects: 0, reExecutions: 0, staleReports: 0, crashes: 0, workerFaults: 0, clockJumps: 0, storeFaults: 0, controlOps: 0, linearizabilityUnchecked: 0, featureLevelNotRaised: 0 };
  const failingSeeds: Array<{ seed: number; nodes: number; kind: string }> = [];
  for (let s = args.startSeed; s < args.startSeed + args.seeds; s++) {
    for (const nodes of args.nodes) {
      const r = await runSchedulerSimulation({ seed: s, nodes, ...sim });
      t.runs++;
      t.steps += r.steps;
      t.faults += r.faults;
      t.simulatedMs += r.simulatedMs;
      t.slotsChecked += r.slotsChecked;
      t.trimmedSlots += r.trimmedSlots;
      t.runsChecked += r.runsChecked;
      t.effects += r.effects;
      t.reExecutions += r.reExecutions;
      t.crashes += r.crashes;
      t.staleReports += r.staleReports;
      t.workerFaults += r.workerFaults;
      t.clockJumps += r.clockJumps;
      t.storeFaults += r.storeFaults;
      t.controlOps += r.controlOps;
      t.linearizabilityUnchecked += r.linearizabilityUnchecked;
      // Runs that ended with a replica below this build's feature level (the raise loop's work).
      if (r.featureLevels.some((l) => l < SUPPORTED_FEATURE_LEVEL)) t.featureLevelNotRaised++;
      if (r.violations.length > 0) {
        t.violations++;
        failingSeeds.push({ seed: s, nodes, kind: r.violations[0]!.kind });
        console.error(`seed ${s} (${nodes} nodes): ${r.violations[0]!.kind}: ${r.violations[0]!.detail}`);
      }
      if (t.runs % 500 === 0) console.error(`progress ${JSON.stringify({ ...summary(), lastSeed: s })}`);
    }
  }
  console.log(JSON.stringify(summary()));
  // Under a mutation, a caught seed is the expected outcome.
  process.exitCode = args.mutations.size > 0 ? (t.violations > 0 ? 0 : 1) : t.violations > 0 ? 1 : 0;

  function summary() {
    const secs = (performance.now() - started) / 1000;
    const { runs, simulatedMs, ...rest } = t;
    return {
      seeds: runs,
      ...rest,
      seedsPerSecond: Math.round((runs / secs) * 10) / 10,
      simulatedPerWallSecond: Math.round(simulatedMs / 1000 / secs),
      failingSeeds,
      mutationsCaught: args.mutations.size > 0 && t.violations > 0 ? [...args.mutations] : [],
    };
  }
}

await main();
