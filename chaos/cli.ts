// `npm run chaos -- --nodes 3|5 --duration 10m --faults all|kill|pause|partition|clock|crashpoints|membership
//   --seed N [--workers N] [--scale N] [--report-dir DIR] [--keep always|on-failure|never]
//   [--snapshot-entries N] [--no-sdk-retries] [--kinds kind,...] [--rogue-workers N] [--unsafe accept-stale-tokens|skip-slot-check|skip-fsync]
//   [--netns] [--secure]`
// Prints progress on stderr, a human summary on stdout, and as the last stdout line the JSON
// summary; exits 1 when a check fails, 2 on bad flags, 3 when the run could not be carried out,
// 4 when --netns was asked for where kernel network faults cannot be made (the reason printed).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDuration } from '../src/client/duration.js';
import { isFaultKind, parseFaultFamilies, type FaultKind } from './nemesis/fault-kinds.js';
import { KernelFaultsUnavailableError, runChaos, UNSAFE_SWITCHES, type UnsafeSwitchName } from './run-chaos.js';

const USAGE = `usage: npm run chaos -- [--nodes 3|5] [--duration 60s] [--faults all|kill,pause,partition,clock,crashpoints,membership]
  [--seed N] [--workers N] [--rogue-workers N] [--scale N] [--kinds kind,...] [--report-dir DIR]
  [--keep always|on-failure|never] [--snapshot-entries N] [--no-sdk-retries]
  [--unsafe accept-stale-tokens|skip-slot-check|skip-fsync] [--netns] [--secure]`;

const VALUE_FLAGS = new Set(['nodes', 'duration', 'faults', 'seed', 'workers', 'rogue-workers', 'scale', 'kinds', 'report-dir', 'keep', 'snapshot-entries', 'unsafe']);
const BOOLEAN_FLAGS = new Set(['no-sdk-retries', 'netns', 'secure']);

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function usage(msg: string): never {
  process.stderr.write(`chaos: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

// A mistyped flag must not start a run of the wrong shape (a long one, by default all faults).
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
for (let i = 0; i < args.length; i++) {
  const a = args[i]!;
  const name = a.startsWith('--') ? a.slice(2) : undefined;
  if (name !== undefined && BOOLEAN_FLAGS.has(name)) continue;
  if (name !== undefined && VALUE_FLAGS.has(name)) {
    if (args[i + 1] === undefined || args[i + 1]!.startsWith('--')) usage(`${a} needs a value`);
    i++;
    continue;
  }
  usage(`unknown argument ${a}`);
}

const nodes = Number(flag('nodes') ?? '3');
if (nodes !== 3 && nodes !== 5) usage('--nodes must be 3 or 5');
let durationMs: number;
try {
  durationMs = parseDuration(flag('duration') ?? '60s', '--duration');
} catch (e) {
  usage((e as Error).message);
}
let families;
try {
  families = parseFaultFamilies(flag('faults') ?? 'all');
} catch (e) {
  usage((e as Error).message);
}
const seed = Number(flag('seed') ?? Date.now() % 1_000_000);
if (!Number.isSafeInteger(seed) || seed < 0) usage('--seed must be a non-negative integer');
for (const k of flag('kinds')?.split(',') ?? []) if (!isFaultKind(k)) usage(`--kinds: unknown kind ${k}`);
const keep = (flag('keep') ?? 'on-failure') as 'always' | 'on-failure' | 'never';
if (!['always', 'on-failure', 'never'].includes(keep)) usage('--keep: always, on-failure or never');
const unsafe = process.argv.flatMap((a, i) => (a === '--unsafe' ? [process.argv[i + 1]!] : []));
for (const u of unsafe) if (!(UNSAFE_SWITCHES as readonly string[]).includes(u)) usage(`--unsafe: ${u} is not one of ${UNSAFE_SWITCHES.join(', ')}`);

try {
  const r = await runChaos({
    nodes: nodes as 3 | 5,
    durationMs,
    families,
    seed,
    workers: Number(flag('workers') ?? '3'),
    rogueWorkers: Number(flag('rogue-workers') ?? '0'),
    sdkRetries: !process.argv.includes('--no-sdk-retries'),
    netns: process.argv.includes('--netns'),
    secure: process.argv.includes('--secure'),
    ...(flag('kinds') ? { kinds: flag('kinds')!.split(',') as FaultKind[] } : {}),
    scale: Number(flag('scale') ?? '1'),
    reportDir: flag('report-dir') ?? join(tmpdir(), 'herald-chaos-reports'),
    keep,
    unsafe: unsafe as UnsafeSwitchName[],
    ...(flag('snapshot-entries') ? { snapshotEntries: Number(flag('snapshot-entries')) } : {}),
  });
  process.stdout.write(`${r.human}\n${JSON.stringify(r.summary)}\n`);
  process.exit(r.report.ok ? 0 : 1);
} catch (e) {
  if (e instanceof KernelFaultsUnavailableError) {
    process.stderr.write(`chaos: SKIPPED: ${e.message}\n`);
    process.exit(4);
  }
  process.stderr.write(`chaos: the run could not be carried out: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(3);
}
