// Who is calling: the result of authentication (authenticator.ts), whatever the transport.
import { Role } from '../../gen/herald/v1/auth_service.js';

export interface Principal {
  /** The token's or certificate's name; recorded in audit lines and worker ids. */
  readonly name: string;
  readonly role: Role;
  /** Worker principals: the task types they may take runs of. */
  readonly taskTypes: ReadonlySet<string>;
  /** How it was established ('none': auth is off on this node). */
  readonly via: 'token' | 'certificate' | 'forwarded' | 'none';
  /** Token principals: the token's id (its record is re-checked by long-lived streams). */
  readonly tokenId?: string;
}

/** The principal of every call while auth is off: no checks, everything allowed. */
export const UNAUTHENTICATED_ADMIN: Principal = Object.freeze({ name: 'anonymous', role: Role.ROLE_ADMIN, taskTypes: new Set<string>(), via: 'none' as const });

/**
 * The name a job records as created_by / updated_by: the principal's, '' while auth is off (the
 * anonymous admin is nobody in particular). Put into the command by the leader before proposing.
 */
export function recordedName(principal: Principal): string {
  return principal.via === 'none' ? '' : principal.name;
}

const NAMES: Record<number, string> = {
  [Role.ROLE_ADMIN]: 'admin',
  [Role.ROLE_OPERATOR]: 'operator',
  [Role.ROLE_VIEWER]: 'viewer',
  [Role.ROLE_WORKER]: 'worker',
};

export function roleName(role: Role): string {
  return NAMES[role] ?? 'none';
}

/** `admin` → ROLE_ADMIN; undefined for anything else. */
export function roleOf(name: string): Role | undefined {
  const r = Object.entries(NAMES).find(([, n]) => n === name.toLowerCase());
  return r ? (Number(r[0]) as Role) : undefined;
}
