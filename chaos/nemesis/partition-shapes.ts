// Partition shapes as sets of blocked directed links between node ids. Pure: the nemesis applies
// them to the link proxies, tests check them here. A link "a>b" is what a sends to b.

export type DirectedLink = `${string}>${string}`;

export function link(from: string, to: string): DirectedLink {
  return `${from}>${to}`;
}

/** Both directions between every node of `a` and every node of `b`. */
export function cut(a: readonly string[], b: readonly string[]): Set<DirectedLink> {
  const out = new Set<DirectedLink>();
  for (const x of a) {
    for (const y of b) {
      if (x === y) continue;
      out.add(link(x, y));
      out.add(link(y, x));
    }
  }
  return out;
}

export function isolate(node: string, all: readonly string[]): Set<DirectedLink> {
  return cut(
    [node],
    all.filter((n) => n !== node),
  );
}

/** Two sides; `minority` is cut off from everyone else. */
export function split(minority: readonly string[], all: readonly string[]): Set<DirectedLink> {
  return cut(
    minority,
    all.filter((n) => !minority.includes(n)),
  );
}

/**
 * Ring of overlapping majorities (Jepsen's "majorities ring"): node i talks only to its two ring
 * neighbours, so every node sees a majority (itself + 2 of 5) but no two see the same one.
 * `order` is the ring order (a permutation of the nodes).
 */
export function ring(order: readonly string[]): Set<DirectedLink> {
  const n = order.length;
  const out = new Set<DirectedLink>();
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const d = Math.min((i - j + n) % n, (j - i + n) % n);
      if (d > 1) out.add(link(order[i]!, order[j]!));
    }
  }
  return out;
}

/** One direction only: `from` cannot send to `to`, the reverse still flows. */
export function oneWay(from: string, to: string): Set<DirectedLink> {
  return new Set([link(from, to)]);
}

/** Nodes each node can still send to (for reports and tests). */
export function reachability(all: readonly string[], blocked: ReadonlySet<DirectedLink>): Map<string, string[]> {
  return new Map(all.map((a) => [a, all.filter((b) => b !== a && !blocked.has(link(a, b)))]));
}
