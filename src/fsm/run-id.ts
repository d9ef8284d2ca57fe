// Run identity: a run id is derived from (job id, slot), so firing a slot twice computes the same
// id and finds the run already there (I1). Forms:
//   "<jobId>@<slotMs>"        the scheduled run of a slot
//   "<jobId>@<slotMs>~m<n>"   manual trigger n of the job (slotMs = trigger time)
//   "<jobId>@<slotMs>~b"      backfill of a slot
// Job ids never contain '@' or '~' (validation.ts), so parsing is unambiguous.
import { HeraldError } from '../herald-error.js';
import { MAX_TIME_MS, isValidId } from './validation.js';

export type RunKind = 'scheduled' | 'manual' | 'backfill';

export interface ParsedRunId {
  readonly jobId: string;
  readonly slotMs: number;
  /** '' (scheduled), 'm<n>' (manual) or 'b' (backfill). */
  readonly suffix: string;
  readonly kind: RunKind;
}

export function scheduledRunId(jobId: string, slotMs: number): string {
  return `${jobId}@${slotMs}`;
}

export function manualRunId(jobId: string, slotMs: number, seq: number): string {
  return `${jobId}@${slotMs}~m${seq}`;
}

export function backfillRunId(jobId: string, slotMs: number): string {
  return `${jobId}@${slotMs}~b`;
}

const RUN_ID_RE = /^([A-Za-z0-9._:-]{1,128})@(0|[1-9][0-9]{0,14})(?:~(b|m(?:0|[1-9][0-9]{0,14})))?$/;

/**
 * Parsed ids, reused: apply parses the same id several times per command (lookup, store, index
 * keys) and on every command of a run's life. Parsing is pure and the result is readonly, so a
 * shared object is safe. Bounded: cleared when full.
 */
const parsedIds = new Map<string, ParsedRunId>();
const MAX_PARSED_IDS = 200_000;

/** Parses a run id; undefined when it is not one this FSM could have made. */
export function parseRunId(runId: string): ParsedRunId | undefined {
  const hit = parsedIds.get(runId);
  if (hit !== undefined) return hit;
  const p = parseRunIdUncached(runId);
  if (p !== undefined) {
    if (parsedIds.size >= MAX_PARSED_IDS) parsedIds.clear();
    parsedIds.set(runId, p);
  }
  return p;
}

function parseRunIdUncached(runId: string): ParsedRunId | undefined {
  const m = RUN_ID_RE.exec(runId);
  if (!m) return undefined;
  const jobId = m[1]!;
  if (!isValidId(jobId)) return undefined;
  const suffix = m[3] ?? '';
  const slotMs = Number(m[2]);
  if (slotMs > MAX_TIME_MS) return undefined;
  return { jobId, slotMs, suffix, kind: suffix === '' ? 'scheduled' : suffix === 'b' ? 'backfill' : 'manual' };
}

/** Like parseRunId, but throws INVALID_ID (for the API layer). */
export function requireRunId(runId: string, field = 'run_id'): ParsedRunId {
  const p = parseRunId(runId);
  if (!p) {
    throw new HeraldError('INVALID_ID', `${field}: "${runId.slice(0, 200)}" is not a run id (expected <job id>@<slot ms>[~m<n>|~b])`, { field });
  }
  return p;
}
