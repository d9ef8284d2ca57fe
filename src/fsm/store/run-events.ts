// Runs that entered a state alerts are raised for, as the apply transaction stores them
// (apply-txn.ts putRun): every run transition goes through there, whichever command made it, so
// alerts and DEAD counts (apply-alerts.ts) need no hook in each command.
import { RunState } from '../../gen/herald/v1/run.js';
import type { RunRecord } from './records.js';

/** A run that entered an alert state, in the order commands made them. */
export interface RunStateEvent {
  readonly rec: RunRecord;
  readonly state: RunState;
}

/** By state number: a failed attempt with a retry due, a run failed for good, a slot missed. */
const ALERT_STATES: readonly boolean[] = (() => {
  const a: boolean[] = [];
  a[RunState.RUN_STATE_FAILED] = true;
  a[RunState.RUN_STATE_DEAD] = true;
  a[RunState.RUN_STATE_MISSED] = true;
  return a;
})();

export class RunEvents {
  private list: RunStateEvent[] | undefined;

  /** `rec` was stored, its state changed to `state`: one array lookup on the hot path. */
  changed(rec: RunRecord, state: RunState): void {
    if (ALERT_STATES[state] === true) (this.list ??= []).push({ rec, state });
  }

  /** The events since the last call, oldest first (undefined: none). */
  take(): RunStateEvent[] | undefined {
    const events = this.list;
    this.list = undefined;
    return events;
  }
}
