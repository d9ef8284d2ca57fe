// The ledger process and the worker processes of a chaos run (the ledger outside every fault;
// workers reach the nodes through the client proxies or, on a kernel network, from namespaces of
// their own, so the worker↔leader link can be blackholed). Both run from TypeScript through tsx.
import { join } from 'node:path';
import { ManagedProcess } from './managed-process.js';
import { REPO_ROOT } from './cluster-processes.js';
import type { LedgerSnapshot, CrashMode } from '../ledger/ledger-state.js';

const TSX = ['--import', 'tsx'];

export class LedgerProcess {
  readonly process: ManagedProcess;
  port = 0;

  /** `host`: the address it binds (the bridge's on a kernel network, so workers in namespaces reach it). */
  constructor(
    root: string,
    private readonly host = '127.0.0.1',
  ) {
    this.process = new ManagedProcess({ name: 'ledger', command: process.execPath, args: [...TSX, join(REPO_ROOT, 'chaos', 'ledger', 'ledger-main.ts'), '0', host], cwd: REPO_ROOT, env: { ...process.env, CHAOS_EXIT_WITH_PARENT: '1' }, logFile: join(root, 'ledger.log') });
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  async start(): Promise<void> {
    const j = await this.process.start<{ port: number }>((x) => typeof x.port === 'number', 60_000);
    this.port = j.port;
  }

  async snapshot(): Promise<LedgerSnapshot> {
    const r = await fetch(`${this.url}/snapshot`);
    return (await r.json()) as LedgerSnapshot;
  }

  async arm(mode: CrashMode, workerId?: string): Promise<void> {
    await fetch(`${this.url}/arm`, { method: 'POST', body: JSON.stringify({ mode, workerId }) });
  }

  async disarm(): Promise<number> {
    const r = await fetch(`${this.url}/disarm`, { method: 'POST', body: '{}' });
    return ((await r.json()) as { disarmed: number }).disarmed;
  }
}

export class WorkerProcess {
  readonly process: ManagedProcess;

  constructor(
    readonly id: string,
    root: string,
    endpoints: string[],
    ledgerUrl: string,
    concurrency: number,
    /** A rogue worker ignores lease loss (chaos/worker/rogue-worker-main.ts). */
    readonly rogue = false,
    /** Its slot in the worker pool (a replacement takes the same slot, and network namespace). */
    readonly slot = 0,
    /** Command prefix (e.g. `ip netns exec <ns>`; it execs in place, so the pid is the worker's). */
    prefix: string[] = [],
    /** Extra environment (a secure run's CHAOS_CA and CHAOS_TOKEN). */
    extraEnv: NodeJS.ProcessEnv = {},
  ) {
    const [command, ...args] = [...prefix, process.execPath, ...TSX, join(REPO_ROOT, 'chaos', 'worker', rogue ? 'rogue-worker-main.ts' : 'chaos-worker-main.ts')];
    this.process = new ManagedProcess({
      name: `worker ${id}`,
      command: command!,
      args,
      cwd: REPO_ROOT,
      env: { ...process.env, CHAOS_ENDPOINTS: endpoints.join(','), CHAOS_LEDGER: ledgerUrl, CHAOS_WORKER_ID: id, CHAOS_CONCURRENCY: String(concurrency), ...extraEnv },
      logFile: join(root, `worker-${id}.log`),
    });
  }

  async start(): Promise<void> {
    await this.process.start((j) => j.event === 'started', 60_000);
  }
}
