// `npm run bench -- <name> [args]`: runs bench/<name>.ts (each bench prints JSON as its last line).
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'cli.ts')
  .map((f) => f.slice(0, -3))
  .sort();
// One line per scenario for the usage text (flags: the header comment of each file).
const about: Record<string, string> = {
  'public-commit': 'CreateJob through the SDK (endpoints = every node) at concurrency 1 and 64: ops/s, latency, server CPU per call (--via follower: every call forwarded)',
  'raft-commit': '3 nodes, 256-byte puts at concurrency 1 and 64: ops/s, latency, fsyncs per entry (a RaftService.Forward call per put)',
  failover: 'kill -9 the leader under steady load: new-leader time, fire gap, lost/doubled',
  scale: 'N jobs stored (--jobs): create rate, leader RSS, disk, due-window reads, restart to SERVING, snapshot install',
  compare: 'ours vs etcd and BullMQ (../shared/peers), interleaved, with ours/peer ratios (--rounds, --pairs)',
  'secure-cost': 'herd and steady with TLS + auth (--secure) vs plaintext, interleaved: drain-rate and p99 cost against the issue 29 targets',
  'v8-page-pool': 'what V8 keeps resident after its heap shrinks (pooled pages) and what a memory-reducing GC releases, with its pause',
  retention: 'N unserved 1 s jobs (--jobs 1000) for M minutes (--minutes 10): stored runs and leader RSS at start and end',
};
const name = process.argv[2];
if (!name || !available.includes(name)) {
  const list = available.map((n) => `  ${n}${about[n] ? ` — ${about[n]}` : ''}`).join('\n');
  process.stderr.write(`usage: npm run bench -- <name> [args]\navailable:\n${list}\n`);
  process.exit(2);
}
// The bench sees its own arguments from argv[2] on.
process.argv.splice(2, 1);
await import(pathToFileURL(join(here, `${name}.ts`)).href);
