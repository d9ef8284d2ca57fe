// An applied command's result as the API handlers use it: of the type the command answers, and
// an item's refusal as the typed error the caller gets.
import type { FsmResult, ItemError } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';

export function expectType<T extends FsmResult['type']>(result: FsmResult, type: T): Extract<FsmResult, { type: T }> {
  if (result.type !== type) throw new HeraldError('INTERNAL', `state machine answered ${result.type} where ${type} was expected`);
  return result as Extract<FsmResult, { type: T }>;
}

export function itemError(e: ItemError): HeraldError {
  return new HeraldError(e.code, e.message, { reason: e.reason });
}
