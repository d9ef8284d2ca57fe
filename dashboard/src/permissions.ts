// What the signed-in principal may do, so the pages offer only that. The server's role table
// (fully-qualified method → roles) has no "who am I" call yet, so the dashboard asks by doing:
// ValidateJob changes nothing and needs the write role, so PERMISSION_DENIED for it (before any
// validation) means the token may only read, and no write action is offered. Any other method the
// server refuses with PERMISSION_DENIED is not offered again in this session either.
import { call, onAuthError } from './api.js';
import { JOB, TASK_TYPES } from './types.js';

const DENIED_KEY = 'herald.denied';
const PROBE = `${JOB}/ValidateJob`;
/** The methods the write role adds to reading (the role table: operator and admin). */
const WRITES = ['CreateJob', 'UpdateJob', 'DeleteJob', 'PauseJob', 'ResumeJob', 'TriggerJob', 'BackfillJob', 'CancelRun', 'RetryRun', 'RetryRuns', 'ValidateJob']
  .map((m) => `${JOB}/${m}`)
  .concat([`${TASK_TYPES}/SetTaskType`, `${TASK_TYPES}/DeleteTaskType`]);

function denied(): Set<string> {
  try {
    return new Set(JSON.parse(sessionStorage.getItem(DENIED_KEY) ?? '[]') as string[]);
  } catch {
    return new Set();
  }
}

/** May the principal call `method` ("herald.v1.JobService/PauseJob")? */
export function may(method: string): boolean {
  const d = denied();
  if (d.has(method)) return false;
  return !(d.has(PROBE) && WRITES.includes(method));
}

export function forgetDenied(): void {
  sessionStorage.removeItem(DENIED_KEY);
}

/** Finds out whether the token may write (see above); resolves once known. */
export async function probeRole(): Promise<void> {
  try {
    await call(PROBE, {});
  } catch {
    // INVALID_ARGUMENT (no spec) for a writer; PERMISSION_DENIED is recorded by the listener below.
  }
}

onAuthError((e) => {
  const method = (e as { method?: string }).method;
  if (e.code !== 'PERMISSION_DENIED' || !method) return;
  const d = denied();
  d.add(method);
  sessionStorage.setItem(DENIED_KEY, JSON.stringify([...d]));
});
