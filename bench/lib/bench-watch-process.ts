// A process holding N WatchRuns streams (benches' --watchers N): watcher i starts on endpoint
// i mod the endpoints' count, so the leader and the followers serve a share each. It counts what
// it receives and, when told to finish, reports and exits. Its own CPU is not the figure: the
// benches measure what serving the watchers costs the servers.
import { HeraldClient } from '../../src/client/herald-client.js';

export type BenchWatchMessage = { type: 'ready' } | { type: 'done'; events: number[]; resets: number };

const argv = process.argv;
const arg = (name: string, def: string): string => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : def;
};
const endpoints = arg('endpoints', '').split(',');
const count = Number(arg('count', '1'));
const abort = new AbortController();
const events = new Array<number>(count).fill(0);
let resets = 0;
let attached = 0;
const clients: HeraldClient[] = [];
const loops: Promise<void>[] = [];
for (let i = 0; i < count; i++) {
  const rotated = endpoints.map((_, k) => endpoints[(i + k) % endpoints.length]!);
  const client = new HeraldClient({ endpoints: rotated });
  clients.push(client);
  let first = true;
  loops.push(
    (async () => {
      for await (const it of client.watchRuns({}, { progress: true, signal: abort.signal })) {
        if (first && it.type === 'progress') {
          first = false;
          if (++attached === count) process.send!({ type: 'ready' } satisfies BenchWatchMessage);
        }
        if (it.type === 'change') events[i]!++;
        else if (it.type === 'reset') resets++;
      }
    })().catch(() => undefined),
  );
}
// The bench went away (killed, failed): nothing to report to.
process.on('disconnect', () => process.exit(0));
process.on('message', async (m: { type: string }) => {
  if (m.type !== 'finish') return;
  abort.abort();
  await Promise.all(loops);
  for (const c of clients) c.close();
  process.send!({ type: 'done', events, resets } satisfies BenchWatchMessage, () => process.exit(0));
});
