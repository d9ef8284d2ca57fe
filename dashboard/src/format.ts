// Numbers, instants and schedules as people read them.
import type { Job, JobSpec, Schedule } from './types.js';

/** "RUN_STATE_DEAD" → "dead". */
export function enumName(value: string | undefined, prefix: string): string {
  if (!value || value.endsWith('_UNSPECIFIED')) return '';
  return value.startsWith(prefix) ? value.slice(prefix.length).toLowerCase().replace(/_/g, ' ') : value;
}

export const runState = (s: string): string => enumName(s, 'RUN_STATE_');
export const jobState = (s: string): string => enumName(s, 'JOB_STATE_');

export function num(v: string | number | undefined): number {
  return v === undefined || v === '' ? 0 : Number(v);
}

/** An instant in UTC, ISO-like, to the second; '' for 0. */
export function utc(ms: string | number | undefined): string {
  const n = num(ms);
  if (n <= 0) return '';
  return new Date(n).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** An instant in a time zone (the job's), e.g. "2026-12-06 03:00:00 CET". */
export function inZone(ms: string | number | undefined, timeZone: string): string {
  const n = num(ms);
  if (n <= 0) return '';
  try {
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: timeZone || 'UTC',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hour12: false,
      timeZoneName: 'short',
    }).formatToParts(new Date(n));
    const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
    return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')} ${get('timeZoneName')}`;
  } catch {
    return utc(n);
  }
}

/** A duration: "350 ms", "12 s", "5 min", "2 h 5 min", "3 d". */
export function duration(msIn: string | number): string {
  const ms = Math.abs(num(msIn));
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${Math.round(s % 60)} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  return `${Math.round(h / 24)} d`;
}

/** "in 5 min" / "3 s ago" relative to now. */
export function relative(ms: string | number | undefined, now = Date.now()): string {
  const n = num(ms);
  if (n <= 0) return '';
  const d = n - now;
  return d >= 0 ? `in ${duration(d)}` : `${duration(-d)} ago`;
}

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH_NAMES = ['', 'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

function listOf(field: string, names?: string[]): string | undefined {
  if (field === '*' || field === '?') return undefined;
  const step = /^\*\/(\d+)$/.exec(field);
  if (step) return `every ${step[1]}`;
  if (!/^[\d,-]+$/.test(field)) return field;
  return field
    .split(',')
    .map((part) => part.split('-').map((v) => (names ? (names[Number(v) % names.length] ?? v) : v)).join('–'))
    .join(', ');
}

const pad = (v: string) => (/^\d$/.test(v) ? `0${v}` : v);

/** A cron expression in words (5 fields, or 6 with seconds first); the expression itself when it is unusual. */
export function cronInWords(expression: string): string {
  const f = expression.trim().split(/\s+/);
  if (f.length !== 5 && f.length !== 6) return expression;
  const [sec, min, hour, dom, mon, dow] = f.length === 6 ? f : ['0', ...f];
  const words: string[] = [];
  const simple = (v: string) => /^\d+$/.test(v);
  if (simple(sec!) && simple(min!) && simple(hour!)) words.push(`at ${pad(hour!)}:${pad(min!)}${sec === '0' ? '' : `:${pad(sec!)}`}`);
  else {
    const s = /^\*\/(\d+)$/.exec(sec!);
    const m = /^\*\/(\d+)$/.exec(min!);
    if (s && min === '*' && hour === '*') words.push(`every ${s[1]} seconds`);
    else if (sec === '0' && m && hour === '*') words.push(`every ${m[1]} minutes`);
    else if (sec === '0' && min === '*' && hour === '*') words.push('every minute');
    else if (sec === '0' && simple(min!) && hour === '*') words.push(`every hour at minute ${min}`);
    else if (sec === '0' && simple(min!) && /^\*\/(\d+)$/.test(hour!)) words.push(`every ${hour!.slice(2)} hours at minute ${min}`);
    else words.push(`at second ${sec}, minute ${min}, hour ${hour}`);
  }
  const d = listOf(dom!);
  if (d) words.push(`on day ${d} of the month`);
  const mo = listOf(mon!, MONTH_NAMES);
  if (mo) words.push(`in ${mo}`);
  const w = listOf(dow!, DAY_NAMES);
  if (w) words.push(`on ${w}`);
  if (!d && !w) words.push('every day');
  return words.join(', ');
}

export function scheduleInWords(s: Schedule | undefined): string {
  if (!s) return 'no schedule';
  if (s.cron) return `${cronInWords(s.cron.expression)} (${s.cron.timeZone || 'UTC'})`;
  if (s.every) return `every ${duration(s.every.intervalMs)}${num(s.every.anchorUnixMs) > 0 ? `, anchored at ${utc(s.every.anchorUnixMs)}` : ''}`;
  if (s.at) return `once, at ${utc(s.at.atUnixMs)}`;
  return 'no schedule';
}

export function zoneOf(spec: JobSpec | undefined): string {
  return spec?.schedule?.cron?.timeZone || 'UTC';
}

export function jobSummary(job: Job): string {
  return `${job.spec?.taskType ?? ''} · ${scheduleInWords(job.spec?.schedule)}`;
}

export function base64Text(b64: string | undefined): string {
  if (!b64) return '';
  try {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  } catch {
    return b64;
  }
}
