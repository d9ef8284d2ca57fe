// Scalar values of the job document format: instants as RFC 3339 text, durations as "30s" / "5m",
// enum values as lower-case names, payload bytes as text / structured JSON / base64. Each reader
// throws DocFieldError naming the document path, so a bad file is reported field by field.
import type { DescEnum } from '@bufbuild/protobuf';
import { formatDuration, parseDuration } from '../../client/duration.js';
import { InvalidSpecError } from '../../client/errors.js';
import { MAX_TIME_MS } from '../../fsm/commands/validation.js';

/** A value in a job document: what YAML and JSON can both hold. */
export type DocValue = string | number | boolean | null | DocValue[] | { [key: string]: DocValue };

/** A field of a document that cannot be read; `path` is the document path ("schedule.cron.expression"). */
export class DocFieldError extends Error {
  override name = 'DocFieldError';
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  return `${typeof v} ${String(v)}`;
}

export function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

// RFC 3339 with a zone: a local time without one would mean something different on every machine.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** An instant in unix ms → "2026-12-24T18:00:00Z" (milliseconds only when there are some). */
export function instantToDoc(ms: number): string {
  return new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
}

/** RFC 3339 text (or positive epoch milliseconds) → unix ms. */
export function instantFromDoc(v: unknown, path: string): number {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v <= 0 || v > MAX_TIME_MS) throw new DocFieldError(path, `${v} is not an instant (use RFC 3339, e.g. "2026-12-24T18:00:00Z")`);
    return v;
  }
  if (typeof v !== 'string' || !RFC3339.test(v.trim())) {
    throw new DocFieldError(path, `expected an RFC 3339 instant with a zone, e.g. "2026-12-24T18:00:00Z", got ${describeValue(v)}`);
  }
  const ms = Date.parse(v.trim());
  if (!Number.isFinite(ms) || ms <= 0) throw new DocFieldError(path, `"${v}" is not a valid instant`);
  return ms;
}

export function durationToDoc(ms: number): string {
  return formatDuration(ms);
}

/** "30s", "1h30m", "250ms" (or whole milliseconds) → ms. */
export function durationFromDoc(v: unknown, path: string): number {
  if (typeof v !== 'string' && typeof v !== 'number') throw new DocFieldError(path, `expected a duration like "30s" or "5m", got ${describeValue(v)}`);
  try {
    return parseDuration(v, path);
  } catch (e) {
    if (e instanceof InvalidSpecError) throw new DocFieldError(path, e.message.startsWith(`${path}: `) ? e.message.slice(path.length + 2) : e.message);
    throw e;
  }
}

/** The prefix every value name of a buf-linted enum carries: the zero value's name without "UNSPECIFIED". */
function enumPrefix(e: DescEnum): string {
  const zero = e.values.find((v) => v.number === 0);
  return zero !== undefined && zero.name.endsWith('_UNSPECIFIED') ? zero.name.slice(0, -'UNSPECIFIED'.length) : '';
}

/** OVERLAP_POLICY_BUFFER_ONE → "buffer-one". */
export function enumToDoc(e: DescEnum, value: number): string | number {
  const v = e.values.find((x) => x.number === value);
  if (v === undefined) return value;
  const prefix = enumPrefix(e);
  return (v.name.startsWith(prefix) ? v.name.slice(prefix.length) : v.name).toLowerCase().replace(/_/g, '-');
}

/** "buffer-one", "buffer_one", "BUFFER_ONE" or "OVERLAP_POLICY_BUFFER_ONE" → its number. */
export function enumFromDoc(e: DescEnum, v: unknown, path: string): number {
  const prefix = enumPrefix(e);
  const named = e.values.filter((x) => x.number !== 0 || prefix === '');
  const choices = named.map((x) => enumToDoc(e, x.number)).join(', ');
  if (typeof v !== 'string') throw new DocFieldError(path, `expected one of: ${choices}; got ${describeValue(v)}`);
  const upper = v.trim().toUpperCase().replace(/-/g, '_');
  const found = named.find((x) => x.name === upper || x.name === prefix + upper);
  if (found === undefined) throw new DocFieldError(path, `unknown value ${JSON.stringify(v)} (use one of: ${choices})`);
  return found.number;
}

const BASE64_KEY = '$base64';

function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Bytes → a document value: JSON objects and arrays as structure when that gives the same bytes
 * back (compact JSON), other UTF-8 as text, anything else as { $base64: ... }.
 */
export function bytesToDoc(bytes: Uint8Array): DocValue {
  const text = utf8(bytes);
  if (text === undefined) return { [BASE64_KEY]: Buffer.from(bytes).toString('base64') };
  if (text.startsWith('{') || text.startsWith('[')) {
    try {
      const parsed = JSON.parse(text) as DocValue;
      if (JSON.stringify(parsed) === text) return parsed;
    } catch {
      // not JSON: kept as text
    }
  }
  return text;
}

/** A document value → bytes: text as UTF-8, { $base64 } decoded, other structure as compact JSON. */
export function bytesFromDoc(v: unknown, path: string): Uint8Array {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (isMapping(v) && Object.keys(v).length === 1 && BASE64_KEY in v) {
    const b64 = v[BASE64_KEY];
    if (typeof b64 !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64.replace(/\s+/g, ''))) throw new DocFieldError(`${path}.${BASE64_KEY}`, 'expected base64 text');
    return Buffer.from(b64, 'base64');
  }
  if (isMapping(v) || Array.isArray(v)) return Buffer.from(JSON.stringify(v), 'utf8');
  throw new DocFieldError(path, `expected text, a mapping or a list (written as JSON), or { ${BASE64_KEY}: ... }; got ${describeValue(v)} (quote it to send it as text)`);
}
