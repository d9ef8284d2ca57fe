// Cluster feature levels (rolling upgrades, issue 28). A feature level names a set of command and
// record formats. Every node supports the levels up to SUPPORTED_FEATURE_LEVEL and reports it to
// its peers (raft.proto StreamRequest.feature_level); the cluster's level is state-machine state
// (META_FEATURE_LEVEL), raised only by a committed setFeatureLevel entry that the leader proposes
// once every voter reports at least that level. The leader writes a command part of level L only
// while the cluster level is >= L, so a node of an older binary never meets one until it was
// upgraded. A replica that meets an entry it cannot decode never turns it into a result (that
// would diverge from replicas that understand it): apply throws FsmUnsupportedError and the node
// stops applying until it runs a binary that understands the entry.
import type { FsmCommand, FsmCommandType } from './commands.js';
import { FsmDecodeError } from './binary-codec.js';

export const FEATURE_LEVEL = {
  /** Every command and record as they were before job principals (a store without the key reads as this). */
  BASE: 1,
  /** Job commands carry the caller's principal (created_by / updated_by); setFeatureLevel exists. */
  PRINCIPALS: 2,
  /**
   * Job commands carry the call's request id (Job.created_request_id / updated_request_id); run
   * commands a person makes (trigger, backfill, retry, cancel) its principal and request id
   * (Run.requested_by / request_id).
   */
  REQUEST_IDS: 3,
  /**
   * Retention records on the job how far it trimmed the job's run history (job record format 8,
   * JobRecord.trimmedThroughSlotMs), and backfill refuses a range reaching into it: below this
   * level a trimmed slot looked never run and a backfill ran it again. Apply behaves differently
   * from this level on, so every replica must apply the same level (an older build halts at the
   * setFeatureLevel entry instead of applying past it with the old rule).
   */
  TRIM_HORIZON: 4,
  /**
   * Keys that carry no value (the index keys, idempotency expiry keys) are stored with a one-byte
   * value instead of an empty one: classic-level 3 leaks a native allocation for every empty
   * value it is given (bench/README.md, "An empty value leaks"), several per run and per created
   * job on every replica. Nothing reads these values; the level keeps replicas' bytes identical
   * through a rolling upgrade (an older build writes empty ones).
   */
  INDEX_VALUES: 5,
} as const;

/** The highest level this binary reads and writes. */
export const SUPPORTED_FEATURE_LEVEL = FEATURE_LEVEL.INDEX_VALUES;

/** The optional command parts (and commands) above BASE and the level each needs. Append only. */
export const FEATURE_PARTS: readonly { readonly part: string; readonly level: number }[] = [
  { part: 'setFeatureLevel command (tag 26)', level: FEATURE_LEVEL.PRINCIPALS },
  { part: 'principal on putJob/putJobs/updateJob/deleteJob/pauseJob/resumeJob (Job.created_by/updated_by)', level: FEATURE_LEVEL.PRINCIPALS },
  { part: 'request id on putJob/putJobs/updateJob/deleteJob/pauseJob/resumeJob (Job.created_request_id/updated_request_id)', level: FEATURE_LEVEL.REQUEST_IDS },
  { part: 'principal and request id on triggerJob/backfillJob/retryRuns/cancelRuns (Run.requested_by/request_id)', level: FEATURE_LEVEL.REQUEST_IDS },
  { part: 'trim horizon: retention records the last trimmed slot (job record format 8), backfill refuses slots at or below it (apply rule, no command bytes)', level: FEATURE_LEVEL.TRIM_HORIZON },
  { part: 'index values: keys without a value are stored with a one-byte value (apply rule, no command bytes)', level: FEATURE_LEVEL.INDEX_VALUES },
];

/** Commands whose principal is a level-3 part (on job commands it is level 2). */
const RUN_CALLER_COMMANDS: ReadonlySet<FsmCommandType> = new Set(['triggerJob', 'backfillJob', 'retryRuns', 'cancelRuns']);

/** Commands that exist only from a level above BASE. */
const COMMAND_LEVEL: Partial<Record<FsmCommandType, number>> = {
  setFeatureLevel: FEATURE_LEVEL.PRINCIPALS,
};

/** The lowest cluster level at which every replica understands `cmd`'s bytes. */
export function commandFeatureLevel(cmd: FsmCommand): number {
  let level: number = COMMAND_LEVEL[cmd.type] ?? FEATURE_LEVEL.BASE;
  if ('principal' in cmd && cmd.principal) level = Math.max(level, RUN_CALLER_COMMANDS.has(cmd.type) ? FEATURE_LEVEL.REQUEST_IDS : FEATURE_LEVEL.PRINCIPALS);
  if ('requestId' in cmd && cmd.requestId) level = Math.max(level, FEATURE_LEVEL.REQUEST_IDS);
  if (cmd.type === 'setFeatureLevel') level = Math.max(level, cmd.level);
  return level;
}

/**
 * An entry this binary cannot read: a newer format (unknown command tag or version, bytes past
 * what it knows) or a level above the one it supports. Never a result: apply stops here.
 */
export class FsmUnsupportedError extends FsmDecodeError {
  constructor(
    /** The level the entry needs, when known (undefined: some level above SUPPORTED_FEATURE_LEVEL). */
    readonly neededLevel: number | undefined,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/** The fatal line of a node that meets such an entry (the operator's instruction). */
export function unsupportedEntryMessage(index: number, needed: number | undefined, detail: string, supported: number = SUPPORTED_FEATURE_LEVEL): string {
  const level = needed === undefined ? `${supported + 1} or higher` : String(needed);
  return `entry ${index} needs feature level ${level}; this node supports ${supported}: upgrade this node (${detail})`;
}

/** The stored level's bytes (decimal, like the applied index). */
export function encodeFeatureLevel(level: number): Uint8Array {
  return new TextEncoder().encode(String(level));
}

/** A store or snapshot without the key is at BASE. */
export function decodeFeatureLevel(bytes: Uint8Array | undefined): number {
  if (bytes === undefined) return FEATURE_LEVEL.BASE;
  const n = Number(new TextDecoder().decode(bytes));
  if (!Number.isSafeInteger(n) || n < FEATURE_LEVEL.BASE) throw new Error(`corrupt feature level record: ${new TextDecoder().decode(bytes)}`);
  return n;
}

/**
 * `cmd` as the leader may propose it at cluster level `level`: the parts of a higher level left
 * out (a job command's principal below PRINCIPALS, request ids and a run command's principal
 * below REQUEST_IDS), so the bytes are those of that level. The leader calls it with the level
 * its own state machine applied (never ahead of the committed one).
 */
export function atFeatureLevel<C extends FsmCommand>(cmd: C, level: number): C {
  let out: C = cmd;
  if (level < FEATURE_LEVEL.REQUEST_IDS && 'requestId' in out && out.requestId !== undefined) {
    const { requestId: _dropped, ...rest } = out;
    out = rest as C;
  }
  const principalLevel = RUN_CALLER_COMMANDS.has(cmd.type) ? FEATURE_LEVEL.REQUEST_IDS : FEATURE_LEVEL.PRINCIPALS;
  if (level < principalLevel && 'principal' in out && out.principal !== undefined) {
    const { principal: _dropped, ...rest } = out;
    out = rest as C;
  }
  return out;
}
