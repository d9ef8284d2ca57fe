import { UsageError } from './usage-error.js';

const PER_SECONDS: Record<string, number> = { s: 1, sec: 1, m: 60, min: 60, h: 3600 };

/** "5/s", "300/m", "10/h" or a bare "5" (per second) → runs per second. */
export function parseRate(value: string, flag = '--rate'): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*([a-z]+))?\s*$/.exec(value);
  const per = m ? PER_SECONDS[m[2] ?? 's'] : undefined;
  if (!m || per === undefined) throw new UsageError(`${flag}: "${value}" is not a rate (e.g. 5/s, 300/m, 10/h)`);
  return Number(m[1]) / per;
}

/** Runs per second as the CLI shows it: "5/s", or per minute / hour when below one a second. */
export function formatRate(perSecond: number): string {
  if (perSecond <= 0) return '-';
  if (perSecond >= 1) return `${Number(perSecond.toFixed(3))}/s`;
  if (perSecond * 60 >= 1) return `${Number((perSecond * 60).toFixed(3))}/m`;
  return `${Number((perSecond * 3600).toFixed(3))}/h`;
}
