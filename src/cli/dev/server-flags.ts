// What `herald dev` passes to `herald server` beyond id, peers and data dir. The server command
// is owned elsewhere and still growing (scheduler state machine, metrics listener), so dev reads
// the server's registered options and state machines instead of hard-coding today's set: when the
// scheduler registers and a metrics flag appears, dev uses them without a change here.
import { Command } from 'commander';
import { registerServerCommand, STATE_MACHINES } from '../commands/server.js';

export interface ServerCapabilities {
  /** State machine to ask for explicitly, or undefined to use the server's default. */
  stateMachine: string | undefined;
  /** How to give the server a metrics listen address, if it has such a flag. */
  metricsFlag: { name: string; form: 'addr' | 'port' } | undefined;
  /** Whether the server serves the HTTP port (API as JSON, dashboard) on --http-addr. */
  httpFlag: boolean;
}

const METRICS_FLAGS: Array<{ name: string; form: 'addr' | 'port' }> = [
  { name: '--metrics-addr', form: 'addr' },
  { name: '--metrics-listen', form: 'addr' },
  { name: '--metrics-address', form: 'addr' },
  { name: '--metrics-port', form: 'port' },
];

export function serverCapabilities(): ServerCapabilities {
  const probe = new Command('probe');
  registerServerCommand(probe);
  const server = probe.commands.find((c) => c.name() === 'server');
  const longs = new Set(server?.options.map((o) => o.long).filter((l): l is string => l !== undefined) ?? []);
  const hasStateMachineFlag = longs.has('--state-machine');
  return {
    stateMachine: hasStateMachineFlag && 'scheduler' in STATE_MACHINES ? 'scheduler' : undefined,
    metricsFlag: METRICS_FLAGS.find((f) => longs.has(f.name)),
    httpFlag: longs.has('--http-addr'),
  };
}

export function serverExtraArgs(caps: ServerCapabilities, metricsPort: number, httpPort: number): string[] {
  const args: string[] = [];
  if (caps.stateMachine) args.push('--state-machine', caps.stateMachine);
  if (caps.metricsFlag) args.push(caps.metricsFlag.name, caps.metricsFlag.form === 'addr' ? `127.0.0.1:${metricsPort}` : String(metricsPort));
  if (caps.httpFlag) args.push('--http-addr', `127.0.0.1:${httpPort}`);
  return args;
}
