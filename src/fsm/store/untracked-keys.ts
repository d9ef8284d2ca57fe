// What a transaction still has to read: the keys a batch names that it does not track yet.

/** The distinct keys not in `tracked`, in first-seen order (a batch names most records once). */
export function untracked(keys: readonly string[], tracked: ReadonlyMap<string, unknown>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (tracked.has(k) || seen.has(k)) continue;
    seen.add(k);
    out.push(k);
  }
  return out;
}
