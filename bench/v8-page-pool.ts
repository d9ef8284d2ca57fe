// What V8 keeps of its heap after the heap shrinks (issue 30: the leader's RSS). V8 allocates its
// heap in 256 KiB pages, each its own anonymous mapping; on Node 24 (V8 13.6) pages a GC frees go
// to a pool that only a memory-reducing GC empties, and V8's memory reducer starts one only while
// the program allocates little — a busy server never does. So a server's RSS holds the high-water
// of its V8 heap. This script grows the heap to --mb of live objects, drops them, waits, and
// reports the heap (heapTotal) against the resident 256 KiB mappings at each step; then runs a
// memory-reducing GC (gc({flavor: 'last-resort'})) and reports its pause and what it released.
// Linux only (reads /proc/self/smaps).
//
// Run: npm run bench -- v8-page-pool [--mb 400] [--idle-seconds 20]
// (or node_modules/.bin/node --max-semi-space-size=32 --v8-pool-size=0 --import tsx
//  bench/v8-page-pool.ts: the servers' node flags, server-node-flags.ts).
// The last stdout line is JSON.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { numArg } from './lib/args.js';
import { v8PagesResident } from './lib/machine.js';

const MB = numArg('mb', 400);
const IDLE_S = numArg('idle-seconds', 20);

function snapshot(step: string) {
  const m = process.memoryUsage();
  const s = { step, heapTotalMiB: Math.round(m.heapTotal / 2 ** 20), heapUsedMiB: Math.round(m.heapUsed / 2 ** 20), rssMiB: Math.round(m.rss / 2 ** 20), ...v8PagesResident('self') };
  process.stderr.write(`[v8-page-pool] ${JSON.stringify(s)}\n`);
  return s;
}

// gc() without --expose-gc on the command line: a context made after the flag is set has it.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (o?: object) => void;
const steps = [snapshot('start')];
/** Fills the heap with --mb of live objects; they die when it returns. */
function grow(): void {
  const keep: unknown[] = [];
  // ~150 bytes of heap per item.
  for (let i = 0; i < (MB * 2 ** 20) / 150; i++) keep.push({ a: i, b: `x${i}`, c: [i] });
  steps.push(snapshot('grown'));
}
grow();
gc({ type: 'major', execution: 'sync' });
steps.push(snapshot('dropped, full GC'));
await new Promise((r) => setTimeout(r, IDLE_S * 1000));
steps.push(snapshot(`idle ${IDLE_S} s`));
const t0 = performance.now();
gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
const reducingGcMs = +(performance.now() - t0).toFixed(1);
steps.push(snapshot('memory-reducing GC'));
console.log(JSON.stringify({ bench: 'v8-page-pool', node: process.version, v8: process.versions.v8, mb: MB, idleSeconds: IDLE_S, reducingGcMs, steps }));
