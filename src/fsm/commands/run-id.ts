// Run identity: a run id is derived from (job id, slot), so firing a slot twice computes the same
// id and finds the run already there (I1). Forms:
//   "<jobId>@<slotMs>"        the scheduled run of a slot
//   "<jobId>@<slotMs>~m<n>"   manual trigger n of the job (slotMs = trigger time)
//   "<jobId>@<slotMs>~b"      backfill of a slot
// Job ids never contain '@' or '~' (validation.ts), so parsing is unambiguous.
import { HeraldError } from '../../herald-error.js';
import { MAX_TIME_MS } from './validation.js';

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

/** The run id grammar as a regex: the reference parseRunId's test holds it to. */
export const RUN_ID_PATTERN = /^([A-Za-z0-9._:-]{1,128})@(0|[1-9][0-9]{0,14})(?:~(b|m(?:0|[1-9][0-9]{0,14})))?$/;

/** [A-Za-z0-9._:-]: the characters of an id (validation.ts). */
function isIdChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 58 || c === 45;
}

/** A canonical decimal in s[from, to): "0" or [1-9][0-9]{0,14}; -1 when it is not one. */
function canonicalNumber(s: string, from: number, to: number): number {
  const n = to - from;
  if (n < 1 || n > 15) return -1;
  if (s.charCodeAt(from) === 48) return n === 1 ? 0 : -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/**
 * Parses a run id; undefined when it is not one this FSM could have made.
 * <jobId>@<slot>[~b|~m<n>] read by hand, exactly what RUN_ID_PATTERN accepts (the test holds the two
 * to each other): ids are parsed for every item of every run command, where a regex and then the
 * job id's own check cost more than the rest of looking the run up. (Memoizing parses instead
 * cost more than it saved once a herd's 100k ids were in the table.)
 */
export function parseRunId(runId: string): ParsedRunId | undefined {
  const len = runId.length;
  let i = 0;
  while (i < len && i <= 128 && isIdChar(runId.charCodeAt(i))) i++;
  if (i === 0 || i > 128 || i >= len || runId.charCodeAt(i) !== 64 /* @ */) return undefined;
  const jobId = runId.slice(0, i);
  const slotStart = i + 1;
  let j = slotStart;
  while (j < len && runId.charCodeAt(j) !== 126 /* ~ */) j++;
  const slotMs = canonicalNumber(runId, slotStart, j);
  if (slotMs < 0 || slotMs > MAX_TIME_MS) return undefined;
  let suffix = '';
  if (j < len) {
    suffix = runId.slice(j + 1);
    const ok = suffix === 'b' || (suffix.charCodeAt(0) === 109 /* m */ && canonicalNumber(suffix, 1, suffix.length) >= 0);
    if (!ok) return undefined;
  }
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
