// The worker processes of a run: `size` slots, each holding one live worker process. A worker
// that died (kill -9, crash instruction) is replaced by a new process with a new worker id
// (`w<slot>.<generation>`), as a restarted worker host would be.
import { WorkerProcess } from './support-processes.js';

export class WorkerPool {
  private readonly slots: Array<WorkerProcess | undefined>;
  private readonly generations: number[];
  readonly all: WorkerProcess[] = [];

  constructor(
    size: number,
    private readonly root: string,
    private readonly endpoints: () => string[],
    private readonly ledgerUrl: () => string,
    private readonly concurrency = 4,
    /** How many of the slots (the first ones) run rogue workers. */
    private readonly rogue = 0,
    /** The command prefix a slot's worker runs under (a network namespace of its own), or []. */
    private readonly prefix: (slot: number) => string[] = () => [],
    /** Extra environment of every worker (a secure run's CA file and worker token). */
    private readonly env: NodeJS.ProcessEnv = {},
  ) {
    this.slots = new Array(size).fill(undefined);
    this.generations = new Array(size).fill(0);
  }

  async startAll(): Promise<void> {
    await Promise.all(this.slots.map((_, i) => this.startSlot(i)));
  }

  private async startSlot(i: number): Promise<void> {
    this.generations[i]! += 1;
    const rogue = i < this.rogue;
    const w = new WorkerProcess(`${rogue ? 'r' : 'w'}${i + 1}.${this.generations[i]}`, this.root, this.endpoints(), this.ledgerUrl(), this.concurrency, rogue, i, this.prefix(i), this.env);
    this.slots[i] = w;
    this.all.push(w);
    await w.start();
  }

  running(): WorkerProcess[] {
    return this.slots.filter((w): w is WorkerProcess => !!w && w.process.running);
  }

  /** A running worker chosen by `choice` in [0, 1). */
  pick(choice: number): WorkerProcess | undefined {
    const running = this.slots.filter((w): w is WorkerProcess => !!w && w.process.running);
    return running[Math.floor(choice * running.length)];
  }

  /** Resumes paused workers and replaces dead ones. */
  async healAll(): Promise<void> {
    await Promise.all(
      this.slots.map(async (w, i) => {
        if (w?.process.running) {
          if (w.process.paused) w.process.signal('SIGCONT');
          return;
        }
        await this.startSlot(i);
      }),
    );
  }

  /** Graceful stop of every worker (SIGTERM, then SIGKILL). */
  async stopAll(graceMs = 3_000): Promise<void> {
    await Promise.all(this.all.map((w) => w.process.stop(graceMs)));
  }

  async close(): Promise<void> {
    await Promise.all(this.all.map((w) => w.process.close()));
  }

  get started(): number {
    return this.all.length;
  }
}
