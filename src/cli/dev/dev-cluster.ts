// The processes of the local dev cluster: one `herald server` child per node, each in its own
// process group (a terminal's Ctrl-C reaches only `herald dev`, which then stops the nodes in
// order) with its JSON logs in <data-dir>/<id>.log and the orphan guard preloaded.
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DevNodePorts } from './dev-ports.js';
import { SERVER_NODE_FLAGS } from '../../server/node/server-node-flags.js';

export interface DevClusterOptions {
  dataDir: string;
  /** The members the cluster was bootstrapped with (`--peers`). */
  nodes: DevNodePorts[];
  /** Nodes added later (`herald dev add-node`): they start with `--join`, never `--peers`. */
  joined?: DevNodePorts[];
  /** Extra `herald server` flags per node (state machine, metrics address). */
  extraArgs: (node: DevNodePorts) => string[];
  logLevel: string;
}

export interface DevNode extends DevNodePorts {
  logPath: string;
  proc: ChildProcess | undefined;
  exited: Promise<void>;
  /** The metrics port the server announced in its "listening" line (0 if it did not). */
  announcedMetricsPort: number;
}

export interface DevClusterEvents {
  /** A node exited while the cluster was not being stopped. */
  nodeExit: [node: DevNode, code: number | null, signal: NodeJS.Signals | null];
}

const BIN = fileURLToPath(new URL('../../../../bin/herald.mjs', import.meta.url));
const GUARD = new URL('./orphan-guard.js', import.meta.url).href;

/** The last log line of a node, as its message (JSON logs: err.message or msg). */
function lastLogMessage(path: string): string {
  let line = '';
  try {
    line = readFileSync(path, 'utf8').trimEnd().split('\n').pop() ?? '';
  } catch {
    return '';
  }
  try {
    const j = JSON.parse(line) as { msg?: string; err?: { message?: string } };
    return [j.msg, j.err?.message].filter(Boolean).join(': ');
  } catch {
    return line;
  }
}

export class DevCluster extends EventEmitter<DevClusterEvents> {
  readonly nodes: DevNode[];
  private readonly joiners = new Set<string>();
  private stopping = false;

  constructor(private readonly o: DevClusterOptions) {
    super();
    this.nodes = [...o.nodes, ...(o.joined ?? [])].map((n) => this.devNode(n));
    for (const n of o.joined ?? []) this.joiners.add(n.id);
  }

  private devNode(n: DevNodePorts): DevNode {
    return { ...n, logPath: join(this.o.dataDir, `${n.id}.log`), proc: undefined, exited: Promise.resolve(), announcedMetricsPort: 0 };
  }

  /** The bootstrap members, as `--peers` (the same on every start: the cluster id derives from it). */
  peersFlag(): string {
    return this.o.nodes.map((n) => `${n.id}=127.0.0.1:${n.peerPort}/127.0.0.1:${n.clientPort}`).join(',');
  }

  /**
   * Starts one more node that joins the running cluster (`--join` the others); resolves once it
   * listens. Adding it to the configuration is the caller's (ClusterService AddMember, promote).
   */
  async addNode(ports: DevNodePorts, timeoutMs = 30_000): Promise<DevNode> {
    const n = this.devNode(ports);
    this.joiners.add(n.id);
    this.nodes.push(n);
    await this.startNode(n, timeoutMs);
    return n;
  }

  clientEndpoints(): string[] {
    return this.nodes.map((n) => `127.0.0.1:${n.clientPort}`);
  }

  /** Starts every node; resolves once all announced their ports, rejects if one exits first. */
  async start(timeoutMs = 30_000): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.startNode(n, timeoutMs)));
  }

  private startNode(n: DevNode, timeoutMs: number): Promise<void> {
    const logFd = openSync(n.logPath, 'a');
    const args = [
      ...SERVER_NODE_FLAGS,
      '--import',
      GUARD,
      BIN,
      'server',
      '--id',
      n.id,
      ...(this.joiners.has(n.id)
        ? ['--join', this.nodes.filter((o) => o.id !== n.id).map((o) => `127.0.0.1:${o.clientPort}`).join(','), '--peer-addr', `127.0.0.1:${n.peerPort}`, '--client-addr', `127.0.0.1:${n.clientPort}`]
        : ['--peers', this.peersFlag()]),
      '--data-dir',
      join(this.o.dataDir, n.id),
      '--log-level',
      this.o.logLevel,
      ...this.o.extraArgs(n),
    ];
    const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', logFd], detached: true });
    closeSync(logFd);
    n.proc = proc;
    n.exited = new Promise((resolve) =>
      proc.once('exit', (code, signal) => {
        if (!this.stopping) this.emit('nodeExit', n, code, signal);
        resolve();
      }),
    );
    // A broken stdin pipe just means the node is gone; exit handling covers that.
    proc.stdin!.on('error', () => undefined);
    return new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`node ${n.id} did not start within ${timeoutMs} ms; see ${n.logPath}`)), timeoutMs);
      const onData = (d: Buffer) => {
        out += d.toString('utf8');
        for (const line of out.split('\n')) {
          if (!line.includes('"listening"')) continue;
          try {
            const j = JSON.parse(line) as { metricsPort?: number };
            if (typeof j.metricsPort === 'number') n.announcedMetricsPort = j.metricsPort;
          } catch {
            continue;
          }
          clearTimeout(timer);
          proc.stdout!.off('data', onData);
          proc.stdout!.resume(); // keep draining so the node never blocks on a full pipe
          resolve();
          return;
        }
      };
      proc.stdout!.on('data', onData);
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        const why = lastLogMessage(n.logPath);
        reject(new Error(`node ${n.id} exited (${code ?? signal}) while starting: ${why ? `${why} (log: ${n.logPath})` : `see ${n.logPath}`}`));
      });
    });
  }

  alive(n: DevNode): boolean {
    return n.proc !== undefined && n.proc.exitCode === null && n.proc.signalCode === null;
  }

  aliveCount(): number {
    return this.nodes.filter((n) => this.alive(n)).length;
  }

  /**
   * Stops every node: SIGTERM (each hands leadership over and closes its storage), then SIGKILL
   * whatever is still running after `graceMs`. Resolves when all have exited.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    for (const n of this.nodes) if (this.alive(n)) this.signal(n, 'SIGTERM');
    const all = Promise.all(this.nodes.map((n) => n.exited));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
    clearTimeout(timer);
    if (timedOut) this.kill();
    await all;
  }

  /** SIGKILL to every node still running (second Ctrl-C, or the dev process going down). */
  kill(): void {
    this.stopping = true;
    for (const n of this.nodes) if (this.alive(n)) this.signal(n, 'SIGKILL');
  }

  private signal(n: DevNode, sig: NodeJS.Signals): void {
    try {
      n.proc!.kill(sig);
    } catch {
      // already gone
    }
  }
}
