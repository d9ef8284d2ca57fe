import type { Command } from 'commander';
import { pino, type Logger } from 'pino';
import { isHeraldError } from '../../herald-error.js';
import { FsmUnsupportedError } from '../../fsm/commands/feature-levels.js';
import { KvStateMachine } from '../../raft/kv/kv-state-machine.js';
import { createNode } from '../../server/node/create-node.js';
import { DEFAULT_FOLLOWER_APPLY_WINDOW_MS, MAX_FOLLOWER_APPLY_WINDOW_MS, type HeraldNode, type StateMachineFactory } from '../../server/node/herald-node.js';
import { parseMembers } from '../../server/node/node-config.js';
import { fetchCluster } from '../../server/node/join-cluster.js';
import type { PeerInfo } from '../../raft/ports.js';
import { credentials } from '@grpc/grpc-js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { planAllocator } from '../server-allocator.js';
import { DEFAULT_HEAP_REDUCE_INTERVAL_MS, HeapReducer } from '../../server/node/heap-reducer.js';
import { addSchedulerFlags, schedulerNodeCreator, schedulerStateMachineFactory } from '../../server/scheduler-cli.js';
import type { NodeTls } from '../../server/grpc/tls/node-tls.js';
import { addTlsFlags, tlsFromFlags, TlsFlagError, watchCertificates, type TlsFlags } from './server-tls.js';

/** Exit codes of `herald server` that a supervisor (or test) can tell apart. */
export const EXIT_SERVER = {
  /** Bad flags, or an empty data dir with --initial-cluster-state existing. */
  usage: 2,
  /** The data dir holds a corrupt or inconsistent log / state machine. */
  corruptStorage: 3,
  /** The data dir belongs to another cluster. */
  clusterMismatch: 4,
  /**
   * Anything else at runtime: the node stopped because its log or state machine store failed
   * (an I/O error while applying, say). A supervisor restarts it; it applies again from the last
   * applied index its store holds.
   */
  failed: 1,
} as const;

/** How long a node that failed may take to stop before it exits anyway. */
const FATAL_STOP_BOUND_MS = 5000;

/** State machines the server can run: the scheduler (Herald itself) or a small KV machine for Raft tests and benches. */
export const STATE_MACHINES: Record<string, StateMachineFactory> = {
  kv: (dir) => KvStateMachine.open(dir),
  scheduler: schedulerStateMachineFactory,
};

interface ServerFlags extends TlsFlags {
  id: string;
  peers?: string;
  join?: string;
  clientPeers?: string;
  peerAddr?: string;
  clientAddr?: string;
  dataDir: string;
  clusterId?: string;
  initialClusterState: string;
  stateMachine: string;
  tickMs: string;
  electionTicks: string;
  heartbeatTicks: string;
  snapshotEntries: string;
  compactionKeep: string;
  snapshotBytes: string;
  compactionKeepBytes: string;
  followerApplyWindowMs: string;
  replicateEffects?: boolean;
  pretty?: boolean;
  logLevel: string;
  allocator: string;
  heapReduceIntervalMs: string;
}

export function registerServerCommand(program: Command): void {
  addTlsFlags(addSchedulerFlags(program.command('server')))
    .description('run one cluster node (client port + peer port)')
    .requiredOption('--id <id>', 'this node id, e.g. n1')
    .option(
      '--peers <list>',
      'all members at bootstrap: n1=127.0.0.1:7101,n2=127.0.0.1:7102,... (peer addresses; "id=peer/client" adds client addresses); once the cluster changed its membership the log says who the members are',
    )
    .option(
      '--join <endpoints>',
      'start a new member of a running cluster (client addresses of members, comma-separated): it starts as nobody\'s voter and waits to be added with `herald cluster add`; needs --peer-addr and --client-addr',
    )
    .option('--client-peers <list>', 'client (API) addresses of the members: n1=127.0.0.1:7201,...')
    .option('--peer-addr <host:port>', 'listen address of the peer (Raft) port (default: this node in --peers)')
    .option('--client-addr <host:port>', 'listen address of the client (API) port (default: this node in --client-peers, else 127.0.0.1:0)')
    .option('--data-dir <dir>', 'data directory', './data')
    .option('--cluster-id <id>', 'cluster id to write at bootstrap / require on restart (default: derived from --peers)')
    .option(
      '--initial-cluster-state <state>',
      'new: an empty data dir bootstraps a member of a new cluster; existing: the cluster runs already, so refuse to start on an empty data dir (a wiped node must rejoin with `herald cluster add`)',
      'new',
    )
    .option('--state-machine <name>', `state machine to serve (${Object.keys(STATE_MACHINES).join(', ')})`, 'scheduler')
    .option('--tick-ms <ms>', 'Raft tick interval (monotonic clock)', '100')
    .option('--election-ticks <n>', 'election timeout in ticks (randomized in [n, 2n))', '10')
    .option('--heartbeat-ticks <n>', 'heartbeat interval in ticks', '1')
    .option('--snapshot-entries <n>', 'snapshot and compact the log every n applied entries', '10000')
    .option('--compaction-keep <n>', 'entries kept behind the snapshot for slow followers', '5000')
    .option('--snapshot-bytes <n>', 'also snapshot once the entries applied since the last one hold n bytes of commands', String(16 * 1024 * 1024))
    .option('--compaction-keep-bytes <n>', 'most bytes of entries kept behind the snapshot', String(8 * 1024 * 1024))
    .option('--follower-apply-window-ms <ms>', `a follower applies committed entries in groups gathered over this long (0 = at once; at most ${MAX_FOLLOWER_APPLY_WINDOW_MS})`, String(DEFAULT_FOLLOWER_APPLY_WINDOW_MS))
    .option('--no-replicate-effects', 'followers evaluate every committed command themselves, instead of writing the effects the leader sends them beside the log')
    .option('--allocator <name>', 'memory allocator: auto (jemalloc when libjemalloc.so.2 is installed, else the system malloc), jemalloc (refuse to start without it), system', 'auto')
    .option(
      '--heap-reduce-interval-ms <ms>',
      'ask V8 for one memory-reducing collection this often, so the heap pages a burst of work grew are returned (0 = never; node/heap-reducer.ts)',
      String(DEFAULT_HEAP_REDUCE_INTERVAL_MS),
    )
    .option('--pretty', 'human-readable logs instead of JSON')
    .option('--log-level <level>', 'pino log level', 'info')
    .action(async (flags: ServerFlags) => {
      await runServer(flags);
    });
}

function int(name: string, v: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    process.stderr.write(`herald server: ${name} must be an integer ${range} (got "${v}")\n`);
    process.exit(EXIT_SERVER.usage);
  }
  return n;
}

/**
 * The members to seed a --join node with: the running cluster's (asked of the --join endpoints),
 * plus this node at its --peer-addr / --client-addr. A node that joined before (its data dir has
 * a log) starts from its log when no endpoint answers.
 */
async function joinedMembers(flags: ServerFlags, tls: NodeTls | undefined, log: Logger): Promise<{ clusterId?: string; members: PeerInfo[] }> {
  const self: PeerInfo = { id: flags.id, peerAddress: flags.peerAddr!, clientAddress: flags.clientAddr! };
  const endpoints = flags.join!.split(',').map((e) => e.trim()).filter((e) => e !== '');
  try {
    const c = await fetchCluster(endpoints, tls?.forwardingChannelCredentials() ?? credentials.createInsecure());
    return { clusterId: c.clusterId, members: [...c.members.filter((m) => m.id !== flags.id), self] };
  } catch (e) {
    if (existsSync(join(flags.dataDir, 'raft'))) {
      log.warn({ err: e }, 'no --join endpoint answered; starting from the log');
      return { members: [self] };
    }
    process.stderr.write(`herald server: cannot join: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(EXIT_SERVER.usage);
  }
}

function makeLogger(flags: ServerFlags): Logger {
  const base = { level: flags.logLevel, base: { node: flags.id } };
  if (flags.pretty) {
    return pino({ ...base, transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } } });
  }
  // JSON on stderr: stdout stays free for machine-readable announcements.
  return pino(base, pino.destination({ fd: 2, sync: false }));
}

async function runServer(flags: ServerFlags): Promise<void> {
  // First, before any file or port is open: the allocator is chosen by re-executing (same pid).
  const allocator = planAllocator(flags.allocator, { env: process.env, platform: process.platform, exists: existsSync, canExec: typeof process.execve === 'function' });
  if (allocator.kind === 'refuse') {
    process.stderr.write(`herald server: ${allocator.message}\n`);
    process.exit(EXIT_SERVER.usage);
  }
  if (allocator.kind === 'exec') process.execve!(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], allocator.env);
  let members: PeerInfo[] = [];
  try {
    if (flags.join !== undefined) {
      if (!flags.peerAddr || !flags.clientAddr) throw new Error('--join needs --peer-addr and --client-addr (the addresses the cluster will reach this node at)');
    } else if (flags.peers === undefined) {
      throw new Error('--peers is required (or --join to add this node to a running cluster)');
    } else {
      members = parseMembers(flags.peers, flags.clientPeers);
    }
  } catch (e) {
    process.stderr.write(`herald server: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(EXIT_SERVER.usage);
  }
  if (flags.initialClusterState !== 'new' && flags.initialClusterState !== 'existing') {
    process.stderr.write(`herald server: --initial-cluster-state must be new or existing (got "${flags.initialClusterState}")\n`);
    process.exit(EXIT_SERVER.usage);
  }
  const factory = STATE_MACHINES[flags.stateMachine];
  if (!factory) {
    process.stderr.write(`herald server: unknown --state-machine "${flags.stateMachine}" (known: ${Object.keys(STATE_MACHINES).join(', ')})\n`);
    process.exit(EXIT_SERVER.usage);
  }
  const self = members.find((m) => m.id === flags.id);
  const listen = [flags.peerAddr ?? self?.peerAddress ?? '', flags.clientAddr ?? (self?.clientAddress || '127.0.0.1:0')].filter((a) => a !== '');
  let tls: NodeTls | undefined;
  try {
    tls = tlsFromFlags(flags, listen);
  } catch (e) {
    if (!(e instanceof TlsFlagError)) throw e;
    process.stderr.write(`herald server: ${e.message}\n`);
    process.exit(EXIT_SERVER.usage);
  }
  const certPollMs = int('--cert-poll-ms', flags.certPollMs, 0);
  const heapReduceIntervalMs = int('--heap-reduce-interval-ms', flags.heapReduceIntervalMs, 0);
  const log = makeLogger(flags);
  let joinClusterId: string | undefined;
  if (flags.join !== undefined) {
    const joined = await joinedMembers(flags, tls, log);
    members = joined.members;
    joinClusterId = joined.clusterId;
  }
  let node: HeraldNode;
  try {
    node = await (flags.stateMachine === 'scheduler' ? schedulerNodeCreator(flags) : createNode)({
      id: flags.id,
      members,
      peerListen: flags.peerAddr,
      clientListen: flags.clientAddr,
      dataDir: flags.dataDir,
      clusterId: flags.clusterId ?? joinClusterId,
      initialClusterState: flags.join !== undefined ? 'join' : flags.initialClusterState,
      stateMachine: factory,
      logger: log,
      tickMs: int('--tick-ms', flags.tickMs, 1),
      electionTicks: int('--election-ticks', flags.electionTicks, 2),
      heartbeatTicks: int('--heartbeat-ticks', flags.heartbeatTicks, 1),
      snapshotEntries: int('--snapshot-entries', flags.snapshotEntries, 1),
      compactionKeepEntries: int('--compaction-keep', flags.compactionKeep, 0),
      snapshotBytes: int('--snapshot-bytes', flags.snapshotBytes, 1),
      compactionKeepBytes: int('--compaction-keep-bytes', flags.compactionKeepBytes, 0),
      followerApplyWindowMs: int('--follower-apply-window-ms', flags.followerApplyWindowMs, 0, MAX_FOLLOWER_APPLY_WINDOW_MS),
      replicateEffects: flags.replicateEffects !== false,
      tls,
    });
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    log.error({ err: e }, 'refusing to start');
    log.flush();
    process.stderr.write(`herald server: refusing to start: ${msg}\n`);
    const code = isHeraldError(e, 'CORRUPT_STORAGE')
      ? EXIT_SERVER.corruptStorage
      : isHeraldError(e, 'CLUSTER_MISMATCH')
        ? EXIT_SERVER.clusterMismatch
        : isHeraldError(e, 'INVALID_ARGUMENT') || isHeraldError(e, 'INVALID_ID') || isHeraldError(e, 'EMPTY_DATA_DIR')
          ? EXIT_SERVER.usage
          : EXIT_SERVER.failed;
    setTimeout(() => process.exit(code), 50);
    return;
  }
  // Logged once serving (a refusal to start stays one line on stderr).
  if (allocator.kind === 'stay') log.info({ allocator: allocator.allocator, why: allocator.why }, `memory allocator: ${allocator.allocator}`);
  if (tls) watchCertificates(tls, certPollMs, log);
  else log.warn({ insecure: true }, 'serving plaintext (--insecure): no TLS, any caller is trusted');
  const heapReducer = heapReduceIntervalMs > 0 ? new HeapReducer({ intervalMs: heapReduceIntervalMs, onReduced: (ms) => log.debug({ durationMs: Math.round(ms) }, 'memory-reducing collection') }) : undefined;
  heapReducer?.start();
  // One machine-readable line on stdout: tests and tools learn the bound ports from it.
  process.stdout.write(
    JSON.stringify({ event: 'listening', id: node.id, clusterId: node.clusterId, peerPort: node.peerPort, clientPort: node.clientPort }) + '\n',
  );

  // SIGUSR2: one JSON line of Raft/storage counters on stdout (benches compute fsyncs per entry).
  process.on('SIGUSR2', () => {
    const st = node.driver.status();
    process.stdout.write(
      JSON.stringify({
        event: 'stats',
        id: node.id,
        role: st.role,
        term: st.term,
        commit: st.commit,
        applied: node.driver.appliedIndex(),
        driver: node.driver.stats,
        storage: node.logStore.stats,
        transport: { messages: node.transport.sentMessages, batches: node.transport.sentBatches },
      }) + '\n',
    );
  });

  let exiting = false;
  /** The driver failed (storage or state machine): whatever else happens, the exit code is `failed`. */
  let fatal = false;
  const exit = (code: number) => {
    log.flush();
    setTimeout(() => process.exit(fatal ? EXIT_SERVER.failed : code), 20);
  };
  const onSignal = (sig: string) => {
    if (exiting) return;
    exiting = true;
    log.info({ signal: sig }, 'shutting down');
    heapReducer?.stop();
    node.stop({ transfer: true, graceMs: 5000 }).then(
      () => {
        log.info('stopped');
        exit(0);
      },
      (e: unknown) => {
        log.error({ err: e }, 'unclean shutdown');
        exit(EXIT_SERVER.failed);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  node.events.on('fatal', (e) => {
    fatal = true;
    if (e instanceof FsmUnsupportedError) {
      // A committed entry of a newer format (rolling upgrade): the node stays up, NOT_SERVING
      // (health and readiness report the failure), applying nothing, until it is restarted on a
      // build that understands the entry. Exiting would only make a supervisor restart it into
      // the same entry.
      log.fatal({ neededLevel: e.neededLevel }, e.message);
      process.stderr.write(`herald server: fatal: ${e.message}\n`);
      return;
    }
    if (exiting) return;
    exiting = true;
    process.stderr.write(`herald server: fatal: ${e.message}\n`);
    // (The driver logged the error.) A store that failed may not close either: the exit must
    // not wait on it for ever.
    setTimeout(() => exit(EXIT_SERVER.failed), FATAL_STOP_BOUND_MS);
    void node.stop({ transfer: false, graceMs: 500 }).finally(() => exit(EXIT_SERVER.failed));
  });
}
