// `herald server` flags of the scheduler (leases, heartbeats, misfire threshold, wheel horizon,
// metrics listener) and the bridge from the CLI's node options to a scheduler node. Kept here so
// the server command only chooses between state machines.
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { MAX_CLAIM_AHEAD_MS, MAX_ITEMS_PER_COMMAND, SchedulerStateMachine } from '../fsm/index.js';
import { UNSAFE_ENV, type UnsafeSwitches } from '../fsm/apply/unsafe-switches.js';
import { FEATURE_LEVEL, SUPPORTED_FEATURE_LEVEL } from '../fsm/commands/feature-levels.js';
import type { HeraldNode, NodeOptions, StateMachineFactory } from './node/herald-node.js';
import { createSchedulerNode } from './scheduler-node.js';
import { HeraldError } from '../herald-error.js';
import { hostOf, isLoopbackHost } from './grpc/tls/insecure-policy.js';
import { schedulerBounds, type SchedulerConfig } from './leader/leader-config.js';
import { CLIENT_LIMIT_FLAGS, clientLimitsOf, DEFAULT_CLIENT_LIMITS, type ClientLimits } from './auth/client-limits.js';

export const schedulerStateMachineFactory: StateMachineFactory = (dir) => SchedulerStateMachine.open(dir);

const FLAGS: Array<[flag: string, key: keyof SchedulerConfig, help: string]> = [
  ['--lease-ms <ms>', 'defaultLeaseMs', 'lease duration for jobs that set none'],
  ['--heartbeat-interval-ms <ms>', 'heartbeatIntervalMs', 'worker heartbeat period (sent in the welcome)'],
  ['--misfire-threshold-ms <ms>', 'misfireThresholdMs', 'slots older than this when fired follow the misfire policy'],
  ['--horizon-ms <ms>', 'horizonMs', 'how far ahead the timing wheel holds fire times'],
  ['--watchdog-grace-ms <ms>', 'watchdogGraceMs', 'a due slot without a run record after this long is flagged'],
  ['--watchdog-interval-ms <ms>', 'watchdogIntervalMs', 'how often the watchdog and the starting-deadline sweep run'],
  ['--trim-interval-ms <ms>', 'trimIntervalMs', 'how often run history is trimmed to each job\'s retention (one bounded trim command per round)'],
  ['--claim-batch <n>', 'claimBatchSize', 'most claims per dispatch round (admission limit)'],
  ['--fire-batch <n>', 'fireBatchSize', 'most due slots per fireRuns command'],
  ['--fires-in-flight <n>', 'maxFiresInFlight', 'fireRuns commands in flight at once'],
  ['--max-fire-hold-ms <ms>', 'maxFireHoldMs', 'hold due slots for worker capacity at most this long (also at most half the misfire threshold and watchdog grace; 0 = fire as due)'],
  ['--scheduler-tick-ms <ms>', 'tickMs', 'how often the scheduler looks at the timing wheel'],
  ['--wheel-resolution-ms <ms>', 'wheelResolutionMs', 'bucket width of the timing wheel'],
  ['--dispatch-lead-ms <ms>', 'dispatchLeadMs', `fire and claim runs up to this long before their instant; workers hold them until then (0 = off, at most ${MAX_CLAIM_AHEAD_MS})`],
];

/** Flags that size one command: bounded by what one command may carry. */
const BATCH_KEYS: ReadonlySet<keyof SchedulerConfig> = new Set(['claimBatchSize', 'fireBatchSize']);

function camel(flag: string): string {
  return flag
    .slice(2)
    .split(' ')[0]!
    .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * The chaos suite's negative controls (src/fsm/apply/unsafe-switches.ts, src/raft/storage/unsafe-durability.ts):
 * each breaks an invariant on purpose so a test can show the checkers notice. Refused unless the
 * process runs with HERALD_UNSAFE_TEST_SWITCHES=1.
 */
const UNSAFE_FLAGS = [
  ['--unsafe-accept-stale-tokens', 'unsafeAcceptStaleTokens', 'accept results and lease renewals under superseded fencing tokens (breaks I3)'],
  ['--unsafe-skip-slot-check', 'unsafeSkipSlotCheck', 'fire a slot again although it already has a run (breaks I1)'],
  ['--unsafe-skip-fsync', 'unsafeSkipFsync', 'acknowledge Raft log writes before they are durable (breaks I4)'],
] as const;

export function addSchedulerFlags(cmd: Command): Command {
  for (const [flag, , help] of FLAGS) cmd.option(flag, `scheduler: ${help}`);
  cmd.option('--metrics-addr <host:port>', 'serve Prometheus /metrics here (scheduler)');
  cmd.option('--metrics-token-file <file>', 'require `Authorization: Bearer <token>` on /metrics, the token read from this file on every scrape (replace the file to rotate it)');
  cmd.option('--http-addr <host:port>', 'serve the API as JSON over HTTP and the web dashboard here (plaintext: loopback only unless --allow-insecure-network)');
  cmd.option('--auth', 'scheduler: require a credential (bearer token or client certificate) on every client-port call, with roles (README "Secure a cluster")');
  cmd.option('--auth-bootstrap-file <file>', 'scheduler: implies --auth; a file holding the admin token the first leader puts once per cluster, named bootstrap-admin (`herald auth bootstrap-token --out FILE` writes one)');
  cmd.option('--auth-rate-limit <n>', 'scheduler, with auth: calls per second one principal may make (burst twice that; 0 = no limit; default 1000)');
  for (const [flag, key, help] of CLIENT_LIMIT_FLAGS) cmd.option(`${flag} <n>`, `client port: ${help} (${key.endsWith('Ms') ? '' : '0 = no cap; '}default ${DEFAULT_CLIENT_LIMITS[key]})`);
  cmd.option('--watch-log-events <n>', 'scheduler: run and job changes the node keeps for watch streams to resume from (0 = WatchService off)');
  for (const [flag, , help] of UNSAFE_FLAGS) cmd.option(flag, `TEST ONLY, scheduler: ${help}; refused unless ${UNSAFE_ENV}=1`);
  cmd.option('--unsafe-feature-level <n>', `TEST ONLY, scheduler: play an older build — report and apply feature levels up to n only (it stops applying at the first entry above); refused unless ${UNSAFE_ENV}=1`);
  return cmd;
}

/** --unsafe-feature-level: the level an "older build" supports; exits 2 without the opt-in or out of range. */
function unsafeFeatureLevelOf(flags: Record<string, unknown>): number | undefined {
  const v = flags.unsafeFeatureLevel;
  if (v === undefined) return undefined;
  if (process.env[UNSAFE_ENV] !== '1') {
    process.stderr.write(`herald server: --unsafe-feature-level: a test-only switch (it plays an older build); refusing to start (set ${UNSAFE_ENV}=1 only in tests)\n`);
    process.exit(2);
  }
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < FEATURE_LEVEL.BASE || n > SUPPORTED_FEATURE_LEVEL) {
    process.stderr.write(`herald server: --unsafe-feature-level must be an integer from ${FEATURE_LEVEL.BASE} to ${SUPPORTED_FEATURE_LEVEL} (got "${String(v)}")\n`);
    process.exit(2);
  }
  process.stderr.write(`herald server: WARNING: unsafe test switch on: --unsafe-feature-level ${n}\n`);
  return n;
}

/** The unsafe switches asked for; exits 2 with a message when any is on without the opt-in. */
function unsafeSwitchesOf(flags: Record<string, unknown>): { fsm: UnsafeSwitches; skipFsync: boolean } | undefined {
  const on = UNSAFE_FLAGS.filter(([, key]) => flags[key] === true).map(([flag]) => flag);
  if (on.length === 0) return undefined;
  if (process.env[UNSAFE_ENV] !== '1') {
    process.stderr.write(
      `herald server: ${on.join(' ')}: test-only negative control${on.length > 1 ? 's' : ''} that break${on.length > 1 ? '' : 's'} Herald's guarantees on purpose; refusing to start (set ${UNSAFE_ENV}=1 only in tests)\n`,
    );
    process.exit(2);
  }
  process.stderr.write(`herald server: WARNING: unsafe test switches on: ${on.join(' ')}\n`);
  return {
    fsm: { acceptStaleTokens: flags.unsafeAcceptStaleTokens === true, skipSlotCheck: flags.unsafeSkipSlotCheck === true },
    skipFsync: flags.unsafeSkipFsync === true,
  };
}

function schedulerOverrides(flags: Record<string, unknown>): Partial<SchedulerConfig> {
  const out: Partial<SchedulerConfig> = {};
  for (const [flag, key] of FLAGS) {
    const v = flags[camel(flag)];
    if (v === undefined) continue;
    const n = Number(v);
    const { min, max } = schedulerBounds(key);
    if (!Number.isSafeInteger(n) || n < min) {
      process.stderr.write(`herald server: ${flag.split(' ')[0]} must be a ${min === 0 ? 'non-negative' : 'positive'} integer (got "${String(v)}")\n`);
      process.exit(2);
    }
    if (max !== undefined && n > max) {
      process.stderr.write(`herald server: ${flag.split(' ')[0]} must be at most ${max} (got ${n})\n`);
      process.exit(2);
    }
    if (BATCH_KEYS.has(key) && n > MAX_ITEMS_PER_COMMAND) {
      // A larger batch would make every command of it refused whole by the state machine.
      process.stderr.write(`herald server: ${flag.split(' ')[0]} must be at most ${MAX_ITEMS_PER_COMMAND} (the items one command may carry; got ${n})\n`);
      process.exit(2);
    }
    out[key] = n;
  }
  return out;
}

function watchLogEvents(v: unknown): number {
  const n = Number(v);
  if (typeof v !== 'string' || !/^\d+$/.test(v) || n > 10_000_000) {
    throw new HeraldError('INVALID_ARGUMENT', `--watch-log-events: expected an integer in [0, 10000000], got "${String(v)}"`);
  }
  return n;
}

/** The --http-addr asked for; exits 2 when it is plaintext on a network without the opt-in. */
function httpListenOf(flags: Record<string, unknown>): string | undefined {
  const addr = flags.httpAddr;
  if (typeof addr !== 'string') return undefined;
  if (!isLoopbackHost(hostOf(addr)) && flags.allowInsecureNetwork !== true) {
    process.stderr.write(
      `herald server: --http-addr ${addr}: the HTTP port is plaintext, so bearer tokens would cross the network readable; listen on a loopback address behind a TLS-terminating proxy, or add --allow-insecure-network to accept that\n`,
    );
    process.exit(2);
  }
  return addr;
}

/** The client-port abuse limits given as flags (the rest keep their defaults). */
function clientLimitOverrides(f: Record<string, unknown>): Partial<ClientLimits> {
  const out: Partial<ClientLimits> = {};
  for (const [flag, key] of CLIENT_LIMIT_FLAGS) {
    const v = f[camel(flag)];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new HeraldError('INVALID_ARGUMENT', `${flag}: expected a non-negative integer, got "${String(v)}"`);
    out[key] = Number(v);
  }
  clientLimitsOf(out); // the bounds, naming the flag
  return out;
}

/** --auth / --auth-bootstrap-file: the auth options, or undefined (auth off). */
function authOf(f: Record<string, unknown>): { bootstrapToken?: string; ratePerSecond?: number } | undefined {
  const on = authSwitch(f);
  if (!on) return undefined;
  const v = f.authRateLimit;
  if (v === undefined) return on;
  if (typeof v !== 'string' || !/^\d+$/.test(v) || Number(v) > 1_000_000) {
    throw new HeraldError('INVALID_ARGUMENT', `--auth-rate-limit: expected an integer in [0, 1000000], got "${String(v)}"`);
  }
  return { ...on, ratePerSecond: Number(v) };
}

function authSwitch(f: Record<string, unknown>): { bootstrapToken?: string } | undefined {
  const file = f.authBootstrapFile;
  if (typeof file === 'string') {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new HeraldError('INVALID_ARGUMENT', `--auth-bootstrap-file ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
    return { bootstrapToken: text.trim() };
  }
  return f.auth === true ? {} : undefined;
}

/** A createNode replacement that starts a scheduler node; its stop() stops the scheduler too. */
export function schedulerNodeCreator(flags: object): (o: NodeOptions) => Promise<HeraldNode> {
  const f = flags as Record<string, unknown>;
  return async (o) => {
    const { stateMachine: _ignored, ...rest } = o;
    const scheduler = schedulerOverrides(f);
    const unsafe = unsafeSwitchesOf(f);
    const level = unsafeFeatureLevelOf(f);
    const auth = authOf(f);
    const s = await createSchedulerNode({
      ...rest,
      scheduler,
      ...(auth ? { auth } : {}),
      clientLimits: clientLimitOverrides(f),
      metricsListen: typeof f.metricsAddr === 'string' ? f.metricsAddr : undefined,
      ...(typeof f.metricsTokenFile === 'string' ? { metricsTokenFile: f.metricsTokenFile } : {}),
      httpListen: httpListenOf(f),
      ...(f.watchLogEvents !== undefined ? { watch: { logEvents: watchLogEvents(f.watchLogEvents) } } : {}),
      ...(unsafe || level ? { fsm: { ...(unsafe ? { unsafe: unsafe.fsm } : {}), ...(level ? { supportedFeatureLevel: level } : {}) } } : {}),
      ...(unsafe ? { unsafeSkipFsync: unsafe.skipFsync } : {}),
      ...(level ? { supportedFeatureLevel: () => level } : {}),
    });
    if (s.metricsPort) process.stdout.write(JSON.stringify({ event: 'metrics', id: o.id, metricsPort: s.metricsPort }) + '\n');
    if (s.httpPort) process.stdout.write(JSON.stringify({ event: 'http', id: o.id, httpPort: s.httpPort }) + '\n');
    return { ...s.node, stop: (opts) => s.stop(opts) };
  };
}
