// A run's abort state with its AbortSignal made only when someone asks for it. An AbortController
// (an EventTarget underneath) per run was the largest single cost of running a no-op handler, and
// most handlers never look at their signal; the first abort is remembered either way, so a signal
// asked for after the abort comes back already aborted with the same reason.
import { RunAbortedError, type AbortCause } from './handler-errors.js';

export class RunAbort {
  private controller: AbortController | undefined;
  private abortedWith: RunAbortedError | undefined;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith);
    }
    return this.controller.signal;
  }

  /** Why the run was aborted; undefined while it was not. */
  get cause(): AbortCause | undefined {
    return this.abortedWith?.reason;
  }

  /** Aborts once: later calls keep the first reason. */
  abort(reason: AbortCause, message: string): void {
    if (this.abortedWith) return;
    this.abortedWith = new RunAbortedError(reason, message);
    this.controller?.abort(this.abortedWith);
  }
}
