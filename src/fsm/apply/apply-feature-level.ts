// setFeatureLevel: raises the cluster feature level stored under META_FEATURE_LEVEL
// (feature-levels.ts). Only raises: at or below the current level it changes nothing.
import type { ApplyTxn } from '../store/apply-txn.js';
import type { SetFeatureLevelCommand } from '../commands/commands.js';
import type { FsmResult } from '../commands/results.js';
import { decodeFeatureLevel, encodeFeatureLevel, FEATURE_LEVEL } from '../commands/feature-levels.js';
import { META_FEATURE_LEVEL } from '../store/key-layout.js';
import { itemError } from './item-errors.js';

export async function applySetFeatureLevel(txn: ApplyTxn, cmd: SetFeatureLevelCommand): Promise<FsmResult> {
  if (!Number.isSafeInteger(cmd.level) || cmd.level < FEATURE_LEVEL.BASE) {
    return { type: 'rejected', error: itemError('INVALID_ARGUMENT', `feature level ${cmd.level} is out of range`) };
  }
  const current = decodeFeatureLevel(await txn.getRaw(META_FEATURE_LEVEL));
  if (cmd.level > current) txn.putRaw(META_FEATURE_LEVEL, encodeFeatureLevel(cmd.level));
  return { type: 'empty' };
}
