// Bearer tokens in the state machine (AuthService): the stored record — a salted SHA-256 of the
// secret, never the secret — its validation and its encoding. The secret is drawn by the API
// layer before proposing (apply draws no randomness); the command carries only salt and hash, so
// neither the Raft log, snapshots nor LevelDB ever hold a usable credential. Validated again by
// apply, so every replica refuses the same bad record.
import { Role } from '../../gen/herald/v1/auth_service.js';
import { HeraldError } from '../../herald-error.js';
import { ByteReader, ByteWriter, FsmDecodeError } from './binary-codec.js';
import { isValidId } from './validation.js';

export interface TokenRecord {
  /** Public part of the token string; the key of the record. */
  readonly id: string;
  /** Unique; the principal name recorded on what its holder does. */
  readonly name: string;
  readonly role: Role;
  /** Worker tokens: the task types it may take runs of (empty for other roles). */
  readonly taskTypes: readonly string[];
  readonly salt: Uint8Array;
  /** SHA-256(salt ‖ secret). */
  readonly hash: Uint8Array;
  readonly createdUnixMs: number;
  readonly createdBy: string;
}

/** Most tokens a cluster holds (ListTokens returns all of them). */
export const MAX_TOKENS = 10_000;
/** Most task types one worker token may list. */
export const MAX_TOKEN_TASK_TYPES = 100;
const TOKEN_ID_RE = /^[a-z0-9]{8,32}$/;
const ROLES: ReadonlySet<Role> = new Set([Role.ROLE_ADMIN, Role.ROLE_OPERATOR, Role.ROLE_VIEWER, Role.ROLE_WORKER]);

function bad(field: string, msg: string): never {
  throw new HeraldError('INVALID_ARGUMENT', `${field}: ${msg}`, { field });
}

export function isValidTokenId(id: string): boolean {
  return TOKEN_ID_RE.test(id);
}

/** The request-level checks of a new token (name, role, task types). */
export function validateTokenGrant(g: { name: string; role: Role; taskTypes: readonly string[] }): void {
  if (!isValidId(g.name)) bad('name', `"${g.name.slice(0, 64)}" is not a valid token name ([A-Za-z0-9._:-], 1 to 128 characters)`);
  if (!ROLES.has(g.role)) bad('role', 'must be one of admin, operator, viewer, worker');
  if (g.role === Role.ROLE_WORKER) {
    if (g.taskTypes.length === 0) bad('task_types', 'a worker token needs at least one task type');
    if (g.taskTypes.length > MAX_TOKEN_TASK_TYPES) bad('task_types', `at most ${MAX_TOKEN_TASK_TYPES} task types`);
    for (const t of g.taskTypes) if (!isValidId(t)) bad('task_types', `"${t.slice(0, 64)}" is not a valid task type`);
  } else if (g.taskTypes.length > 0) {
    bad('task_types', 'only worker tokens are limited to task types');
  }
}

export function validateTokenRecord(t: TokenRecord): void {
  if (!isValidTokenId(t.id)) bad('id', 'not a token id');
  validateTokenGrant(t);
  if (t.salt.length < 16 || t.hash.length !== 32) bad('hash', 'a token record needs a salt of at least 16 bytes and a SHA-256 hash');
}

export function writeTokenRecord(w: ByteWriter, t: TokenRecord): ByteWriter {
  return w
    .str(t.id)
    .str(t.name)
    .uint(t.role)
    .list(t.taskTypes, (w, s) => w.str(s))
    .bytes(t.salt)
    .bytes(t.hash)
    .int(t.createdUnixMs)
    .str(t.createdBy);
}

export function readTokenRecord(r: ByteReader): TokenRecord {
  return {
    id: r.str(),
    name: r.str(),
    role: r.uint() as Role,
    taskTypes: r.list((r) => r.str()),
    salt: r.bytes().slice(),
    hash: r.bytes().slice(),
    createdUnixMs: r.int(),
    createdBy: r.str(),
  };
}

export function encodeTokenRecord(t: TokenRecord): Uint8Array {
  return writeTokenRecord(new ByteWriter(), t).finish(true);
}

export function decodeTokenRecord(bytes: Uint8Array): TokenRecord {
  const r = new ByteReader(bytes);
  try {
    const t = readTokenRecord(r);
    r.end();
    return t;
  } catch (e) {
    throw e instanceof FsmDecodeError ? e : new FsmDecodeError(`bad token record: ${(e as Error).message}`);
  }
}
