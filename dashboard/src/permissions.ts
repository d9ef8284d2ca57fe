// What the signed-in principal may do, so the pages offer only that. AuthService.WhoAmI says the
// principal's role once per sign-in; the server's role table (src/server/auth/method-roles.ts)
// is mirrored here for the methods the dashboard offers. The server decides in the end: a method
// it still refuses with PERMISSION_DENIED is not offered again in this session.
import { call, onAuthError } from './api.js';
import { JOB, TASK_TYPES } from './types.js';

const DENIED_KEY = 'herald.denied';
const ROLE_KEY = 'herald.role';
const AUTH = 'herald.v1.AuthService';
/** The methods the write role adds to reading (the role table: operator and admin). */
const WRITES = ['CreateJob', 'UpdateJob', 'DeleteJob', 'PauseJob', 'ResumeJob', 'TriggerJob', 'BackfillJob', 'CancelRun', 'RetryRun', 'RetryRuns', 'ValidateJob']
  .map((m) => `${JOB}/${m}`)
  .concat([`${TASK_TYPES}/SetTaskType`, `${TASK_TYPES}/DeleteTaskType`]);
const WRITERS = new Set(['ROLE_ADMIN', 'ROLE_OPERATOR']);

function denied(): Set<string> {
  try {
    return new Set(JSON.parse(sessionStorage.getItem(DENIED_KEY) ?? '[]') as string[]);
  } catch {
    return new Set();
  }
}

/** May the principal call `method` ("herald.v1.JobService/PauseJob")? */
export function may(method: string): boolean {
  if (denied().has(method)) return false;
  const role = sessionStorage.getItem(ROLE_KEY);
  // Unknown (auth off, or not asked yet): offer it; the server still decides.
  if (!role) return true;
  return !WRITES.includes(method) || WRITERS.has(role);
}

export function forgetDenied(): void {
  sessionStorage.removeItem(DENIED_KEY);
  sessionStorage.removeItem(ROLE_KEY);
}

/** Asks the server who the token belongs to; resolves once the role is known. */
export async function probeRole(): Promise<void> {
  try {
    const me = (await call(`${AUTH}/WhoAmI`, {})) as { role?: string; authEnabled?: boolean };
    if (me.authEnabled && me.role) sessionStorage.setItem(ROLE_KEY, me.role);
    else sessionStorage.removeItem(ROLE_KEY);
  } catch {
    // A refused token is the login page's business (onAuthError in main.tsx).
  }
}

onAuthError((e) => {
  const method = (e as { method?: string }).method;
  if (e.code !== 'PERMISSION_DENIED' || !method) return;
  const d = denied();
  d.add(method);
  sessionStorage.setItem(DENIED_KEY, JSON.stringify([...d]));
});
