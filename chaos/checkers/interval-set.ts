// Closed time intervals, for "was the job certainly paused / maybe paused at this slot".
export interface Interval {
  from: number;
  to: number;
}

export function within(t: number, intervals: readonly Interval[]): boolean {
  return intervals.some((i) => t >= i.from && t <= i.to);
}

/** p-th percentile (0..100) of unsorted numbers; 0 for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}
