// Small formatters shared by the tables: instants, durations, enum names, schedules, payloads.
import { formatDuration } from '../../client/duration.js';
import type { Schedule } from '../../gen/herald/v1/job.js';

/** "JOB_STATE_ACTIVE" → "active"; the prefix is the enum's own name in SNAKE_CASE plus "_". */
export function enumName(table: Record<number, string>, value: number, prefix: string): string {
  const name = table[value];
  if (name === undefined) return String(value);
  return name.startsWith(prefix) ? name.slice(prefix.length).toLowerCase() : name.toLowerCase();
}

/** An instant as "2026-11-29 08:30:05Z"; 0 (unset) as "-". */
export function formatInstant(ms: number): string {
  if (!ms) return '-';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
}

/** "in 4s" / "3m ago" relative to now, rounded to seconds. */
export function formatRelative(ms: number, nowMs = Date.now()): string {
  if (!ms) return '-';
  const delta = Math.round((ms - nowMs) / 1000) * 1000;
  if (delta === 0) return 'now';
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

/** An instant with its distance from now, e.g. "2026-11-29 08:30:05Z (in 4s)". */
export function formatWhen(ms: number, nowMs = Date.now()): string {
  return ms ? `${formatInstant(ms)} (${formatRelative(ms, nowMs)})` : '-';
}

export function formatMs(ms: number): string {
  return ms > 0 ? formatDuration(ms) : '-';
}

export function describeSchedule(schedule: Schedule | undefined): string {
  const kind = schedule?.kind;
  if (!kind) return '-';
  switch (kind.$case) {
    case 'cron':
      return `cron "${kind.cron.expression}"${kind.cron.timeZone ? ` ${kind.cron.timeZone}` : ' UTC'}`;
    case 'every':
      return `every ${formatDuration(kind.every.intervalMs)}${kind.every.anchorUnixMs ? ` from ${formatInstant(kind.every.anchorUnixMs)}` : ''}`;
    case 'at':
      return `at ${formatInstant(kind.at.atUnixMs)}`;
  }
}

/** Bytes as text when they are valid UTF-8 (payloads are usually JSON), else undefined. */
export function utf8OrUndefined(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** A payload shortened for a table cell. */
export function payloadPreview(bytes: Uint8Array, max = 60): string {
  if (bytes.length === 0) return '-';
  const text = utf8OrUndefined(bytes);
  if (text === undefined) return `<${bytes.length} bytes>`;
  const one = text.replace(/\s+/g, ' ');
  return one.length > max ? one.slice(0, max - 1) + '…' : one;
}
