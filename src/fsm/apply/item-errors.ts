// How one item of a batched command fails without failing the others. Its own file because every
// apply-* module and the machine use it: living in one of them made the apply modules import each
// other in a cycle.
import { isHeraldError, type ErrorCode } from '../../herald-error.js';
import type { ItemError } from '../commands/results.js';

export function itemError(code: ErrorCode, message: string, reason = ''): ItemError {
  return { code, message, reason };
}

/** Turns a validation HeraldError into an item error; anything else is a bug and propagates. */
export function asItemError(e: unknown): ItemError {
  if (isHeraldError(e)) return itemError(e.code, e.message, typeof e.details.field === 'string' ? e.details.field : '');
  throw e;
}
