// The operator at the terminal: membership moves run the real `herald cluster ...` commands (the
// run's own copy of the CLI, build-snapshot.ts) against the client endpoints, as a person would,
// and read their exit code, JSON output and error line. Each command is a short-lived process,
// killed if it outlives its bound.
import { spawn } from 'node:child_process';
import { REPO_ROOT } from './cluster-processes.js';

export interface CliOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A `herald cluster` command that failed; `stderr` holds its error line (with the error code). */
export class OperatorCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly outcome: CliOutcome,
  ) {
    super(`herald ${args.join(' ')} exited ${outcome.code}: ${(outcome.stderr || outcome.stdout).trim().slice(0, 600)}`);
  }

  /** True when the error line names this Herald error code (e.g. LEARNER_BEHIND). */
  has(code: string): boolean {
    return this.outcome.stderr.includes(code);
  }
}

export interface MemberView {
  id: string;
  /** 'voter' | 'learner' */
  member: string;
  incarnation: string;
}

export interface ClusterView {
  leaderId: string;
  members: MemberView[];
}

export class OperatorCli {
  /** Every command run, for the fault record ("herald cluster add n4 ... → 0"). */
  readonly commands: string[] = [];

  constructor(
    private readonly heraldBin: string,
    private readonly endpoints: () => string[],
    private readonly timeoutMs = 20_000,
  ) {}

  run(args: string[]): Promise<CliOutcome> {
    const full = [...args, '--endpoints', this.endpoints().join(','), '--json', '--timeout', `${Math.round(this.timeoutMs / 1000)}s`];
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [this.heraldBin, ...full], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), this.timeoutMs + 10_000);
      p.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      p.once('close', (code) => {
        clearTimeout(timer);
        this.commands.push(`herald ${args.join(' ')} → ${code}`);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** Runs the command; throws OperatorCommandError unless it exits 0. */
  async must(args: string[]): Promise<CliOutcome> {
    const r = await this.run(args);
    if (r.code !== 0) throw new OperatorCommandError(args, r);
    return r;
  }

  /** `herald cluster status --json`: the leader and each member's role and incarnation. */
  async status(): Promise<ClusterView> {
    const r = await this.run(['cluster', 'status']);
    let j: { leaderId?: string; members?: MemberView[] };
    try {
      j = JSON.parse(r.stdout) as typeof j;
    } catch {
      throw new OperatorCommandError(['cluster', 'status'], r);
    }
    // Exit 5 (no leader) still prints the members as the answering node sees them.
    if (!j.leaderId) throw new OperatorCommandError(['cluster', 'status'], r);
    return { leaderId: j.leaderId, members: (j.members ?? []).map((m) => ({ id: m.id, member: m.member, incarnation: m.incarnation })) };
  }
}
