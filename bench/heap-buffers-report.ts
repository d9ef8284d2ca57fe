// Who holds the ArrayBuffers (Buffer backing stores, `external` in process.memoryUsage()) in a V8
// heap snapshot: each backing store's bytes are attributed to a retaining path of its owners
// (class names, property names), shortest path from the roots, and summed by path.
//
// Run: npx tsx bench/heap-buffers-report.ts <file.heapsnapshot> [--depth 6] [--top 25]
// Take a snapshot of a server with NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2, then `kill -USR2`.
// The last stdout line is JSON: { totalBytes, buffers, paths: [{ path, bytes, count }] }.
import { readFileSync } from 'node:fs';
import { numArg } from './lib/args.js';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] }; node_count: number };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const file = process.argv.slice(2).find((a) => !a.startsWith('--'));
if (!file) {
  process.stderr.write('usage: heap-buffers-report <file.heapsnapshot> [--depth 6] [--top 25]\n');
  process.exit(2);
}
const DEPTH = numArg('depth', 6);
const TOP = numArg('top', 25);

const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const nf = s.snapshot.meta.node_fields;
const ef = s.snapshot.meta.edge_fields;
const nodeTypes = s.snapshot.meta.node_types[0];
const edgeTypes = s.snapshot.meta.edge_types[0];
const NF = nf.length;
const EF = ef.length;
const iType = nf.indexOf('type');
const iName = nf.indexOf('name');
const iSize = nf.indexOf('self_size');
const iEdges = nf.indexOf('edge_count');
const eType = ef.indexOf('type');
const eName = ef.indexOf('name_or_index');
const eTo = ef.indexOf('to_node');
const n = s.nodes.length / NF;

// First edge of each node, and reverse edges (retainers) in CSR form.
const firstEdge = new Uint32Array(n + 1);
for (let i = 0, e = 0; i < n; i++) {
  firstEdge[i] = e;
  e += s.nodes[i * NF + iEdges]! * EF;
}
firstEdge[n] = s.edges.length;
const retainerCount = new Uint32Array(n + 1);
for (let i = 0; i < n; i++) {
  for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += EF) {
    const t = edgeTypes[s.edges[e + eType]!];
    if (t === 'weak') continue;
    retainerCount[s.edges[e + eTo]! / NF]!++;
  }
}
const retStart = new Uint32Array(n + 1);
for (let i = 0; i < n; i++) retStart[i + 1] = retStart[i]! + retainerCount[i]!;
const retFrom = new Uint32Array(retStart[n]!);
const retEdge = new Uint32Array(retStart[n]!);
const fill = retStart.slice();
for (let i = 0; i < n; i++) {
  for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += EF) {
    if (edgeTypes[s.edges[e + eType]!] === 'weak') continue;
    const to = s.edges[e + eTo]! / NF;
    const k = fill[to]!++;
    retFrom[k] = i;
    retEdge[k] = e;
  }
}

// Distance from the roots (node 0), to follow retainers toward the root along a shortest path.
const dist = new Int32Array(n).fill(-1);
dist[0] = 0;
let queue = [0];
while (queue.length > 0) {
  const next: number[] = [];
  for (const i of queue) {
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += EF) {
      if (edgeTypes[s.edges[e + eType]!] === 'weak') continue;
      const to = s.edges[e + eTo]! / NF;
      if (dist[to] === -1) {
        dist[to] = dist[i]! + 1;
        next.push(to);
      }
    }
  }
  queue = next;
}

const typeOf = (i: number) => nodeTypes[s.nodes[i * NF + iType]!]!;
const nameOf = (i: number) => s.strings[s.nodes[i * NF + iName]!]!;
function edgeLabel(e: number): string {
  const t = edgeTypes[s.edges[e + eType]!];
  const v = s.edges[e + eName]!;
  // Indices (elements, a Map's table slots) would make every buffer a path of its own.
  return t === 'element' || t === 'hidden' || /^\d+$/.test(String(s.strings[v])) ? '[]' : String(s.strings[v]);
}

/** The path from a buffer toward the root: owner names and the edges holding each. */
function pathOf(i: number): string {
  const parts: string[] = [];
  let at = i;
  for (let d = 0; d < DEPTH; d++) {
    let best = -1;
    let bestEdge = -1;
    for (let k = retStart[at]!; k < retStart[at + 1]!; k++) {
      const from = retFrom[k]!;
      if (dist[from]! < 0) continue;
      if (best === -1 || dist[from]! < dist[best]!) {
        best = from;
        bestEdge = retEdge[k]!;
      }
    }
    if (best <= 0) break;
    parts.push(`${typeOf(best) === 'object' || typeOf(best) === 'closure' ? nameOf(best) : typeOf(best)}.${edgeLabel(bestEdge)}`);
    at = best;
  }
  return parts.reverse().join(' > ');
}

// Backing stores: native nodes V8 names for ArrayBuffer data; their self size is the bytes.
const byPath = new Map<string, { bytes: number; count: number }>();
let total = 0;
let buffers = 0;
for (let i = 0; i < n; i++) {
  if (typeOf(i) !== 'native') continue;
  const name = nameOf(i);
  if (!name.includes('JSArrayBufferData') && !name.includes('BackingStore')) continue;
  const size = s.nodes[i * NF + iSize]!;
  total += size;
  buffers++;
  const p = pathOf(i);
  const cur = byPath.get(p) ?? { bytes: 0, count: 0 };
  cur.bytes += size;
  cur.count++;
  byPath.set(p, cur);
}
const paths = [...byPath.entries()].map(([path, v]) => ({ path, ...v })).sort((a, b) => b.bytes - a.bytes).slice(0, TOP);
for (const p of paths) process.stderr.write(`${(p.bytes / 1048576).toFixed(1).padStart(8)} MiB ${String(p.count).padStart(7)}  ${p.path}\n`);
process.stdout.write(`${JSON.stringify({ totalBytes: total, buffers, paths })}\n`);
