// A typed view of an applied entry's result, for code outside the state machine (the leader
// watching apply): the kind of result, read from its two-byte header without decoding or
// allocating. The kinds are result-codec's own tags, so they are defined in one place; decoding
// what a kind carries stays with result-codec's decoders (decodeFireOutcomes, decodeSignals, ...).
import { RESULT_FORMAT_VERSION, RESULT_TAGS } from './result-codec.js';

/** The kind of a non-empty result: its FsmResult type. */
export type AppliedKind = keyof typeof RESULT_TAGS;

/** Kind by tag, built once from the tag table (a dense array: a lookup per applied entry). */
const KIND_OF_TAG: readonly (AppliedKind | undefined)[] = (() => {
  const out: (AppliedKind | undefined)[] = new Array<AppliedKind | undefined>(256).fill(undefined);
  for (const [kind, tag] of Object.entries(RESULT_TAGS)) out[tag] = kind as AppliedKind;
  return Object.freeze(out);
})();

/** The kind of an encoded result; undefined for the empty result (no-op and config entries) and unknown headers. */
export function appliedKindOf(result: Uint8Array): AppliedKind | undefined {
  return result.length > 1 && result[0] === RESULT_FORMAT_VERSION ? KIND_OF_TAG[result[1]!] : undefined;
}
