// What the signed-in principal may do, so the pages offer only that. Until the server says
// (a role's methods, once tokens and roles exist), every method is offered; a method the server
// refused with PERMISSION_DENIED is not offered again in this session.
import { onAuthError } from './api.js';

const DENIED_KEY = 'herald.denied';

function denied(): Set<string> {
  try {
    return new Set(JSON.parse(sessionStorage.getItem(DENIED_KEY) ?? '[]') as string[]);
  } catch {
    return new Set();
  }
}

/** A role's allowed methods as the server lists them (fully-qualified names); undefined: not known. */
const role: { allowed: ReadonlySet<string> | undefined } = { allowed: undefined };

export function setAllowedMethods(methods: readonly string[] | undefined): void {
  role.allowed = methods ? new Set(methods) : undefined;
}

/** May the principal call `method` ("herald.v1.JobService/PauseJob")? */
export function may(method: string): boolean {
  if (denied().has(method)) return false;
  return role.allowed === undefined || role.allowed.has(method);
}

export function forgetDenied(): void {
  sessionStorage.removeItem(DENIED_KEY);
}

onAuthError((e) => {
  const method = (e as { method?: string }).method;
  if (e.code !== 'PERMISSION_DENIED' || !method) return;
  const d = denied();
  d.add(method);
  sessionStorage.setItem(DENIED_KEY, JSON.stringify([...d]));
});
