// A process that grows its JS heap by a few hundred MB, drops it, then keeps allocating small
// short-lived objects (as a busy server does) for a while — with or without a HeapReducer. Prints
// one JSON line: the V8 heap pages still resident at the end, and what the reducer did.
// Run: node --import tsx heap-churn-process.ts <reduce-interval-ms | 0> <major collections> [burst objects] [busy utilization] [max wait ms]
// It stops after that many major collections following the burst (at most after 90 s), so a run
// does the same work whatever the machine's load.
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { HeapReducer } from '../../../src/server/node/heap-reducer.js';
import { v8PagesResident } from '../../../bench/lib/machine.js';

const v8PagesMiB = (): number => v8PagesResident('self').residentMiB;

const intervalMs = Number(process.argv[2]);
const majorsWanted = Number(process.argv[3]);
const BURST = Number(process.argv[4] ?? 400_000);
// The churn keeps the main thread partly busy: by default the reducer ignores that (above 1).
const busyUtilization = Number(process.argv[5] ?? 2);
// How long a request waits for a major collection (default: the reducer's own, intervalMs / 2).
const maxWaitMs = process.argv[6] === undefined ? undefined : Number(process.argv[6]);

const reducer = intervalMs > 0 ? new HeapReducer({ intervalMs, busyUtilization, maxWaitMs }) : undefined;
reducer?.start();
// A burst first (what a herd or a snapshot does to a server): the heap grows, and once the burst
// is garbage its pages go to V8's pool at the next major collection.
let big: unknown[] | undefined = [];
for (let i = 0; i < BURST; i++) big.push({ i, a: [i, i + 1, i + 2, i + 3], s: `v${i}` });
const grownMiB = v8PagesMiB();
big = undefined;
let majors = 0;
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
  if (majors >= majorsWanted) finish();
});
observer.observe({ entryTypes: ['gc'] });

// Then steady work: short-lived objects, a share of them living long enough to be promoted, so
// major collections keep coming at a heap far below the burst's.
let keep: unknown[] = [];
const churn = setInterval(() => {
  for (let i = 0; i < 3000; i++) keep.push({ i, s: `k${i}` });
  if (keep.length > 200_000) keep = keep.slice(100_000);
}, 5);
const cap = setTimeout(() => finish(), 90_000);
function finish(): void {
  observer.disconnect();
  clearTimeout(cap);
  clearInterval(churn);
  reducer?.stop();
  const heapTotalMiB = Math.round(process.memoryUsage().heapTotal / 2 ** 20);
  process.stdout.write(JSON.stringify({ grownMiB, endMiB: v8PagesMiB(), heapTotalMiB, majors, reductions: reducer?.reductions ?? 0, lapsed: reducer?.lapsed ?? 0, deferredBusy: reducer?.deferredBusy ?? 0 }) + '\n');
}
