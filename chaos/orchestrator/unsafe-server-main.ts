// A scheduler node process for the negative controls only: the same node `herald server
// --state-machine scheduler` runs (createSchedulerNode), started with the FSM's test-only unsafe
// switches (src/fsm/unsafe-switches.ts), which `herald server` has no flags for yet. It takes
// the flags ClusterProcesses passes, plus --unsafe-accept-stale-tokens / --unsafe-skip-slot-check,
// and still needs HERALD_UNSAFE_TEST_SWITCHES=1 (the FSM refuses the switches otherwise).
// Run: node --import tsx chaos/orchestrator/unsafe-server-main.ts server --id n1 ...
import { pino } from 'pino';
import { parseMembers } from '../../src/server/node-config.js';
import { createSchedulerNode } from '../../src/server/scheduler-node.js';

const argv = process.argv.slice(2);
const flag = (name: string, def?: string): string => {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < argv.length) return argv[i + 1]!;
  if (def === undefined) throw new Error(`--${name} is required`);
  return def;
};
const has = (name: string) => argv.includes(`--${name}`);

const log = pino({ level: flag('log-level', 'warn'), base: { node: flag('id') } }, pino.destination({ fd: 2, sync: false }));
try {
  const s = await createSchedulerNode({
    id: flag('id'),
    members: parseMembers(flag('peers')),
    peerListen: flag('peer-addr'),
    clientListen: flag('client-addr'),
    dataDir: flag('data-dir'),
    clusterId: flag('cluster-id'),
    logger: log,
    tickMs: Number(flag('tick-ms', '100')),
    electionTicks: Number(flag('election-ticks', '10')),
    snapshotEntries: Number(flag('snapshot-entries', '10000')),
    compactionKeepEntries: Number(flag('compaction-keep', '5000')),
    scheduler: {
      defaultLeaseMs: Number(flag('lease-ms', '30000')),
      heartbeatIntervalMs: Number(flag('heartbeat-interval-ms', '5000')),
      watchdogGraceMs: Number(flag('watchdog-grace-ms', '10000')),
    },
    fsm: { unsafe: { acceptStaleTokens: has('unsafe-accept-stale-tokens'), skipSlotCheck: has('unsafe-skip-slot-check') } },
  });
  const n = s.node;
  process.stdout.write(JSON.stringify({ event: 'listening', id: n.id, clusterId: n.clusterId, peerPort: n.peerPort, clientPort: n.clientPort, unsafe: true }) + '\n');
  const stop = () => void s.stop({ transfer: true, graceMs: 3_000 }).finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} catch (e) {
  process.stderr.write(`unsafe server: refusing to start: ${e instanceof Error ? e.message : String(e)}\n`);
  setTimeout(() => process.exit(1), 50);
}
