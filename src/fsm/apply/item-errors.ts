// How one item of a batched command fails without failing the others, and which thrown errors are
// a rejection at all. Its own file because every apply-* module and the machine use it: living in
// one of them made the apply modules import each other in a cycle.
import { isHeraldError, type ErrorCode } from '../../herald-error.js';
import type { ItemError } from '../commands/results.js';

export function itemError(code: ErrorCode, message: string, reason = ''): ItemError {
  return { code, message, reason };
}

/**
 * The codes a rejection may carry: answers computed from the command and the state only (bad
 * input, not found, conflicts, limits), so every replica computes the same one. Anything else
 * thrown while applying — an I/O error, a corrupt record, INTERNAL, a bug — may happen on one
 * replica only and must stop that node's applying instead (I5): turned into a result, it would
 * make that replica's state differ from the others'.
 */
const REJECTION_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'INVALID_ID',
  'INVALID_SPEC',
  'INVALID_CRON',
  'UNKNOWN_TIME_ZONE',
  'PAYLOAD_TOO_LARGE',
  'INVALID_ARGUMENT',
  'JOB_NOT_FOUND',
  'RUN_NOT_FOUND',
  'TASK_TYPE_NOT_FOUND',
  'TOKEN_NOT_FOUND',
  'ALREADY_EXISTS',
  'VERSION_MISMATCH',
  'INVALID_STATE',
  'STALE_FENCING_TOKEN',
  'LIMIT_EXCEEDED',
]);

/** The item error a deterministic rejection `e` stands for; undefined for anything else (rethrow it). */
export function rejectionOf(e: unknown): ItemError | undefined {
  if (!isHeraldError(e) || !REJECTION_CODES.has(e.code)) return undefined;
  return itemError(e.code, e.message, typeof e.details.field === 'string' ? e.details.field : '');
}

/** Turns a validation HeraldError into an item error; anything else propagates (see rejectionOf). */
export function asItemError(e: unknown): ItemError {
  const rejected = rejectionOf(e);
  if (rejected) return rejected;
  throw e;
}
