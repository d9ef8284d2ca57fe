// `herald server` flags of the scheduler (leases, heartbeats, misfire threshold, wheel horizon,
// metrics listener) and the bridge from the CLI's node options to a scheduler node. Kept here so
// the server command only chooses between state machines.
import type { Command } from 'commander';
import { SchedulerStateMachine } from '../fsm/index.js';
import type { HeraldNode, NodeOptions, StateMachineFactory } from './node.js';
import { createSchedulerNode } from './scheduler-node.js';
import type { SchedulerConfig } from './scheduler-config.js';

export const schedulerStateMachineFactory: StateMachineFactory = (dir) => SchedulerStateMachine.open(dir);

const FLAGS: Array<[flag: string, key: keyof SchedulerConfig, help: string]> = [
  ['--lease-ms <ms>', 'defaultLeaseMs', 'lease duration for jobs that set none'],
  ['--heartbeat-interval-ms <ms>', 'heartbeatIntervalMs', 'worker heartbeat period (sent in the welcome)'],
  ['--misfire-threshold-ms <ms>', 'misfireThresholdMs', 'slots older than this when fired follow the misfire policy'],
  ['--horizon-ms <ms>', 'horizonMs', 'how far ahead the timing wheel holds fire times'],
  ['--watchdog-grace-ms <ms>', 'watchdogGraceMs', 'a due slot without a run record after this long is flagged'],
  ['--claim-batch <n>', 'claimBatchSize', 'most claims per dispatch round (admission limit)'],
];

function camel(flag: string): string {
  return flag
    .slice(2)
    .split(' ')[0]!
    .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

export function addSchedulerFlags(cmd: Command): Command {
  for (const [flag, , help] of FLAGS) cmd.option(flag, `scheduler: ${help}`);
  cmd.option('--metrics-addr <host:port>', 'serve Prometheus /metrics here (scheduler)');
  return cmd;
}

function schedulerOverrides(flags: Record<string, unknown>): Partial<SchedulerConfig> {
  const out: Partial<SchedulerConfig> = {};
  for (const [flag, key] of FLAGS) {
    const v = flags[camel(flag)];
    if (v === undefined) continue;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n <= 0) {
      process.stderr.write(`herald server: ${flag.split(' ')[0]} must be a positive integer (got "${String(v)}")\n`);
      process.exit(2);
    }
    out[key] = n;
  }
  return out;
}

/** A createNode replacement that starts a scheduler node; its stop() stops the scheduler too. */
export function schedulerNodeCreator(flags: object): (o: NodeOptions) => Promise<HeraldNode> {
  const f = flags as Record<string, unknown>;
  return async (o) => {
    const { stateMachine: _ignored, ...rest } = o;
    const s = await createSchedulerNode({ ...rest, scheduler: schedulerOverrides(f), metricsListen: typeof f.metricsAddr === 'string' ? f.metricsAddr : undefined });
    if (s.metricsPort) process.stdout.write(JSON.stringify({ event: 'metrics', id: o.id, metricsPort: s.metricsPort }) + '\n');
    return { ...s.node, stop: (opts) => s.stop(opts) };
  };
}
