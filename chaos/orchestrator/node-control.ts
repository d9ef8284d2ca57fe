// The orchestrator's side of chaos/preload/node-faults.mjs: one JSON control file per node,
// replaced atomically (write + rename) so the preload never reads half a file.
import { renameSync, writeFileSync } from 'node:fs';

export interface ClockControl {
  offsetMs: number;
  driftMsPerS: number;
  /** Real time the drift started (ms); drift accumulates from here. */
  sinceMs: number;
}

export interface CrashControl {
  /** A new id re-arms the point (the match counter restarts). */
  id: string;
  point: 'sync' | 'compaction' | 'snapshot-save' | 'snapshot-install';
  phase: 'before' | 'after';
  /** Crash at the nth matching event. */
  nth: number;
}

/** An injected LevelDB I/O error in the node's state machine store (<data-dir>/sm). */
export interface IoErrorControl {
  /** A new id re-arms it (the match counter restarts); each id fails one operation. */
  id: string;
  /** 'read': a getMany or getSync (apply's reads); 'write': a chained batch write (every apply's one write). */
  op: 'read' | 'write';
  /** Fail the nth matching operation after arming. */
  nth: number;
}

export interface NodeControlState {
  clock: ClockControl;
  crash?: CrashControl;
  ioError?: IoErrorControl;
  /** Where this node's outgoing connections to a peer address go instead (its link proxies). */
  routes?: Record<string, string>;
}

export class NodeControl {
  private state: NodeControlState = { clock: { offsetMs: 0, driftMsPerS: 0, sinceMs: 0 } };

  constructor(readonly file: string) {
    this.write();
  }

  get current(): Readonly<NodeControlState> {
    return this.state;
  }

  setClock(clock: Partial<ClockControl>): void {
    this.state = { ...this.state, clock: { ...this.state.clock, ...clock } };
    this.write();
  }

  armCrash(crash: CrashControl | undefined): void {
    this.state = { ...this.state, crash };
    this.write();
  }

  armIoError(ioError: IoErrorControl | undefined): void {
    this.state = { ...this.state, ioError };
    this.write();
  }

  /** Routes are wiring, not a fault: set when links come and go, kept by reset(). */
  setRoutes(routes: Record<string, string>): void {
    this.state = { ...this.state, routes };
    this.write();
  }

  reset(): void {
    this.state = { clock: { offsetMs: 0, driftMsPerS: 0, sinceMs: 0 }, ...(this.state.routes ? { routes: this.state.routes } : {}) };
    this.write();
  }

  private write(): void {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.state));
    renameSync(tmp, this.file);
  }
}
