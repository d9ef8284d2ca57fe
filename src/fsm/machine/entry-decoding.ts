// The log entries of one apply call as commands: decoded once, before the transaction, and where
// a call must be split so that it never spans a change of the cluster feature level.
import type { Entry } from '../../raft/types.js';
import { FsmDecodeError } from '../commands/binary-codec.js';
import { decodeCommand, FsmObsoleteCommandError } from '../commands/command-codec.js';
import type { FsmCommand } from '../commands/commands.js';
import { commandFeatureLevel, FsmUnsupportedError, SUPPORTED_FEATURE_LEVEL, unsupportedEntryMessage } from '../commands/feature-levels.js';

/** A decoded entry: a command, an obsolete one (answered 'rejected'), or undefined (nothing to apply). */
export type DecodedEntry = FsmCommand | { readonly undecodable: string } | undefined;

/**
 * Decodes the command entries once (undefined for no-op/config and already applied entries). An
 * obsolete tag is answered alike by every build ('rejected'). Any other entry that does not
 * decode throws FsmUnsupportedError naming it: a newer format and corrupt bytes look the same
 * here, and neither may become a result. (Bad bytes cannot reach the log: every proposal is
 * encoded from a typed command by the leader, and a Forward from a peer is decoded by the leader
 * before it is proposed — peer-server.ts.) Anything else thrown propagates.
 */
export function decodeEntries(entries: readonly Entry[], applied: number, supported: number): DecodedEntry[] {
  return entries.map((e) => {
    if (e.index <= applied || e.type !== 'normal' || e.data.length === 0) return undefined;
    try {
      const cmd = decodeCommand(e.data);
      const need = supported < SUPPORTED_FEATURE_LEVEL ? commandFeatureLevel(cmd) : 0;
      if (need > supported) throw new FsmUnsupportedError(need, unsupportedEntryMessage(e.index, need, cmd.type, supported));
      return cmd;
    } catch (err) {
      if (err instanceof FsmUnsupportedError && err.message.startsWith(`entry ${e.index} `)) throw err;
      if (err instanceof FsmObsoleteCommandError) return { undecodable: err.message };
      if (err instanceof FsmUnsupportedError) throw new FsmUnsupportedError(err.neededLevel, unsupportedEntryMessage(e.index, err.neededLevel, err.detail));
      if (err instanceof FsmDecodeError) throw new FsmUnsupportedError(undefined, unsupportedEntryMessage(e.index, undefined, `undecodable: ${err.message}`));
      throw err;
    }
  });
}

/**
 * Where a call must end so that it does not span a change of level: the position of the first
 * setFeatureLevel entry after the first entry, or -1. What a call writes may depend on the level
 * (index values), so without the cut the bytes would depend on how replicas grouped entries into
 * calls.
 */
export function levelChangeCut(decoded: readonly DecodedEntry[]): number {
  return decoded.findIndex((c, i) => i > 0 && c !== undefined && 'type' in c && c.type === 'setFeatureLevel');
}
