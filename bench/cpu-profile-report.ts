// Reads a V8 .cpuprofile (from HERALD_BENCH_CPU_PROF or node --cpu-prof) and prints where the time
// went, as text: what the issue-9 work was steered by.
//   npx tsx bench/cpu-profile-report.ts top FILE [--from S] [--to S] [--limit N]
//       self time per function, optionally only in a time window (seconds since the profile began;
//       e.g. a herd's drain, not its start-up)
//   npx tsx bench/cpu-profile-report.ts inclusive FILE [--from S] [--to S] [--limit N] [--match TEXT]
//       time with the function anywhere on the stack (itself and what it called), optionally only
//       functions whose name or file contains TEXT (e.g. --match server/)
//   npx tsx bench/cpu-profile-report.ts timeline FILE [--bucket MS]
//       per time bucket, the share of idle, GC, FSM apply, server, Raft and gRPC work
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [command, file] = process.argv.slice(2);
const flag = (name: string, def: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
if ((command !== 'top' && command !== 'inclusive' && command !== 'timeline') || !file) {
  process.stderr.write('usage: cpu-profile-report.ts top|inclusive|timeline FILE [--from S] [--to S] [--limit N] [--match TEXT] [--bucket MS]\n');
  process.exit(2);
}

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
const nameOf = (n: ProfileNode): string =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;

/** Each sample with its time since the start and the time it stands for (µs). */
function* samples(): Generator<{ atUs: number; node: ProfileNode; us: number }> {
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    yield { atUs: t, node: byId.get(profile.samples[i]!)!, us: profile.timeDeltas[i + 1] ?? 0 };
  }
}

const categoryCache = new Map<number, string>();
/** The first category on the way to the root: apply wins over what called it. */
function categoryOf(id: number): string {
  const hit = categoryCache.get(id);
  if (hit !== undefined) return hit;
  const n = byId.get(id)!;
  const f = n.callFrame.functionName;
  const url = n.callFrame.url;
  let c: string;
  if (f === '(idle)') c = 'idle';
  else if (f === '(garbage collector)') c = 'gc';
  else if (f === '(program)') c = 'program';
  else if (f === 'applyLocked' || url.includes('/fsm/apply')) c = 'apply';
  else {
    const parent = parentOf.get(id);
    const above = parent === undefined ? 'other' : categoryOf(parent);
    if (above !== 'other') c = above;
    else if (url.includes('/server/')) c = 'server';
    else if (url.includes('/raft/')) c = 'raft';
    else if (url.includes('grpc')) c = 'grpc';
    else c = 'other';
  }
  categoryCache.set(id, c);
  return c;
}

const pct = (part: number, whole: number): string => `${((100 * part) / whole).toFixed(1)}%`;

if (command === 'top') {
  const fromUs = flag('from', 0) * 1e6;
  const toUs = flag('to', Infinity) * 1e6;
  const self = new Map<string, number>();
  let total = 0;
  for (const s of samples()) {
    if (s.atUs < fromUs || s.atUs > toUs) continue;
    const k = nameOf(s.node);
    self.set(k, (self.get(k) ?? 0) + s.us);
    total += s.us;
  }
  const idle = self.get(nameOf(profile.nodes.find((n) => n.callFrame.functionName === '(idle)') ?? profile.nodes[0]!)) ?? 0;
  console.log(`window ${(total / 1e6).toFixed(1)} s, busy ${((total - idle) / 1e6).toFixed(1)} s`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, flag('limit', 40))) {
    console.log(`${(us / 1e6).toFixed(2).padStart(7)} s ${pct(us, total).padStart(6)}  ${k}`);
  }
} else if (command === 'inclusive') {
  const fromUs = flag('from', 0) * 1e6;
  const toUs = flag('to', Infinity) * 1e6;
  const mi = process.argv.indexOf('--match');
  const match = mi >= 0 ? process.argv[mi + 1]! : '';
  const incl = new Map<string, number>();
  let total = 0;
  for (const s of samples()) {
    if (s.atUs < fromUs || s.atUs > toUs) continue;
    total += s.us;
    // Each function once per sample, however often it recurses.
    const seen = new Set<string>();
    for (let id: number | undefined = s.node.id; id !== undefined; id = parentOf.get(id)) seen.add(nameOf(byId.get(id)!));
    for (const k of seen) incl.set(k, (incl.get(k) ?? 0) + s.us);
  }
  console.log(`window ${(total / 1e6).toFixed(1)} s`);
  const rows = [...incl].filter(([k]) => k.includes(match) && !k.startsWith('(root)'));
  for (const [k, us] of rows.sort((a, b) => b[1] - a[1]).slice(0, flag('limit', 40))) {
    console.log(`${(us / 1e6).toFixed(2).padStart(7)} s ${pct(us, total).padStart(6)}  ${k}`);
  }
} else {
  const bucketUs = flag('bucket', 1000) * 1000;
  const buckets = new Map<number, Map<string, number>>();
  for (const s of samples()) {
    const b = Math.floor(s.atUs / bucketUs);
    const m = buckets.get(b) ?? new Map<string, number>();
    const c = categoryOf(s.node.id);
    m.set(c, (m.get(c) ?? 0) + s.us);
    buckets.set(b, m);
  }
  for (const [b, m] of [...buckets].sort((x, y) => x[0] - y[0])) {
    const total = [...m.values()].reduce((a, x) => a + x, 0);
    const parts = [...m].sort((x, y) => y[1] - x[1]).map(([c, us]) => `${c} ${pct(us, total)}`);
    console.log(`${((b * bucketUs) / 1e6).toFixed(1).padStart(7)} s  ${parts.join('  ')}`);
  }
}
