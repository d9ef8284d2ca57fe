// Nearest-rank percentiles, the definition ../shared/peers uses, so figures compare directly.
export function pct(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** The `latenessMs: {p50, p99, max}` shape every firing bench reports. */
export function p50p99max(values: readonly number[]): { p50: number; p99: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  return { p50: pct(s, 0.5), p99: pct(s, 0.99), max: s.length ? s[s.length - 1]! : NaN };
}
