// Instants on the command line: an ISO 8601 date-time ("2026-12-01T09:00:00Z", a zone offset
// or Z required so the meaning does not depend on the caller's machine), epoch milliseconds, or a
// time relative to now ("+30s", "in 30s", "-1h", "1h ago", "now").
import { parseDuration } from '../client/duration.js';
import { UsageError } from './usage-error.js';

const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})$/i;

export function parseInstant(text: string, flag: string, nowMs = Date.now()): number {
  const t = text.trim();
  if (t === 'now') return nowMs;
  if (/^\d+$/.test(t)) {
    const ms = Number(t);
    if (!Number.isSafeInteger(ms) || ms <= 0) throw new UsageError(`${flag}: ${t} is not a valid epoch-milliseconds instant`);
    return ms;
  }
  const rel = /^(?:\+|in\s+)(.+)$/i.exec(t) ?? /^-(.+)$/.exec(t) ?? /^(.+)\s+ago$/i.exec(t);
  if (rel) {
    const sign = t.startsWith('+') || /^in\s/i.test(t) ? 1 : -1;
    return nowMs + sign * parseDuration(rel[1]!, flag);
  }
  if (ISO_WITH_ZONE.test(t)) {
    const ms = Date.parse(t.replace(' ', 'T'));
    if (Number.isFinite(ms)) return ms;
  }
  throw new UsageError(
    `${flag}: "${text}" is not an instant (use ISO 8601 with a zone like 2026-12-01T09:00:00Z, epoch ms, or relative like +30s / "1h ago")`,
  );
}
