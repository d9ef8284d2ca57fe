// Builders for the partition shapes the simulator and chaos suite inject. A shape is a set of
// blocked *directed* links, so symmetric splits and one-way (asymmetric) faults share one form
// and SimNetwork.applyBlocked takes any of them. Random choices (which node, which split, ring
// order) come from the given Prng, so a seed names the shape exactly.

import type { NodeId } from '../types.js';
import type { Prng } from './prng.js';

export type ShapeKind =
  | 'isolate'
  | 'majority-minority'
  | 'ring'
  | 'one-way'
  | 'inbound-isolate'
  | 'outbound-isolate'
  | 'bridge'
  | 'none';

export interface PartitionShape {
  kind: ShapeKind;
  /** Human-readable, for traces: e.g. "isolate n2", "ring n1-n4-n2-n5-n3". */
  description: string;
  /** Directed links that are cut: [from, to] means from's messages never reach to. */
  blocked: Array<[NodeId, NodeId]>;
}

function cutBetween(a: readonly NodeId[], b: readonly NodeId[]): Array<[NodeId, NodeId]> {
  const out: Array<[NodeId, NodeId]> = [];
  for (const x of a) for (const y of b) if (x !== y) out.push([x, y], [y, x]);
  return out;
}

function requireMember(nodes: readonly NodeId[], node: NodeId): void {
  if (!nodes.includes(node)) throw new Error(`partition shape: ${node} is not one of ${nodes.join(',')}`);
}

/** Cuts `node` off from everyone, both directions (use it with the leader's id to isolate the leader). */
export function isolateNode(nodes: readonly NodeId[], node: NodeId): PartitionShape {
  requireMember(nodes, node);
  return {
    kind: 'isolate',
    description: `isolate ${node}`,
    blocked: cutBetween([node], nodes.filter((n) => n !== node)),
  };
}

/** Isolates a node chosen by the seed. */
export function isolateRandomNode(nodes: readonly NodeId[], rng: Prng): PartitionShape {
  return isolateNode(nodes, rng.pick(nodes));
}

/**
 * Splits into a minority and a majority, both internally connected. The minority size is drawn
 * from [1, floor((n-1)/2)]; `minorityIncludes` forces a node (say, the leader) into the minority.
 */
export function majorityMinority(
  nodes: readonly NodeId[],
  rng: Prng,
  opts: { minorityIncludes?: NodeId } = {},
): PartitionShape {
  if (nodes.length < 3) throw new Error('majorityMinority needs at least 3 nodes');
  const size = rng.int(1, Math.floor((nodes.length - 1) / 2) + 1);
  const rest = rng.shuffle(nodes.filter((n) => n !== opts.minorityIncludes));
  let minority: NodeId[];
  if (opts.minorityIncludes !== undefined) {
    requireMember(nodes, opts.minorityIncludes);
    minority = [opts.minorityIncludes, ...rest.slice(0, size - 1)];
  } else {
    minority = rest.slice(0, size);
  }
  const majority = nodes.filter((n) => !minority.includes(n));
  return {
    kind: 'majority-minority',
    description: `split {${minority.join(',')}} | {${majority.join(',')}}`,
    blocked: cutBetween(minority, majority),
  };
}

/**
 * Each node talks only to its two neighbours on a seeded ring order. With 5 nodes every node
 * still sees a majority (itself + 2 neighbours = 3) but no two non-adjacent nodes can talk, so
 * overlapping majorities compete: the shape that exposes bugs in leader stickiness and
 * check-quorum. With 3 nodes the ring is the full mesh (nothing blocked).
 */
export function ring(nodes: readonly NodeId[], rng: Prng): PartitionShape {
  if (nodes.length < 3) throw new Error('ring needs at least 3 nodes');
  const order = rng.shuffle([...nodes]);
  const n = order.length;
  const neighbours = new Map<NodeId, Set<NodeId>>();
  order.forEach((id, i) => neighbours.set(id, new Set([order[(i + 1) % n]!, order[(i + n - 1) % n]!])));
  const blocked: Array<[NodeId, NodeId]> = [];
  for (const a of nodes) for (const b of nodes) if (a !== b && !neighbours.get(a)!.has(b)) blocked.push([a, b]);
  return { kind: 'ring', description: `ring ${order.join('-')}`, blocked };
}

/** Cuts one direction of one link: `from` cannot reach `to`, `to` still reaches `from`. */
export function oneWay(nodes: readonly NodeId[], from: NodeId, to: NodeId): PartitionShape {
  requireMember(nodes, from);
  requireMember(nodes, to);
  if (from === to) throw new Error('oneWay: from and to must differ');
  return { kind: 'one-way', description: `one-way ${from} -/-> ${to}`, blocked: [[from, to]] };
}

/** A seeded one-way link between two distinct nodes. */
export function randomOneWay(nodes: readonly NodeId[], rng: Prng): PartitionShape {
  const [from, to] = rng.shuffle([...nodes]);
  return oneWay(nodes, from!, to!);
}

/**
 * `node` can send but hears nobody: a leader in this state keeps sending heartbeats but gets
 * no responses, so only check-quorum makes it step down.
 */
export function inboundIsolate(nodes: readonly NodeId[], node: NodeId): PartitionShape {
  requireMember(nodes, node);
  return {
    kind: 'inbound-isolate',
    description: `${node} hears nobody`,
    blocked: nodes.filter((n) => n !== node).map((n): [NodeId, NodeId] => [n, node]),
  };
}

/** `node` hears everyone but nobody hears it (followers time out; it keeps seeing their votes). */
export function outboundIsolate(nodes: readonly NodeId[], node: NodeId): PartitionShape {
  requireMember(nodes, node);
  return {
    kind: 'outbound-isolate',
    description: `nobody hears ${node}`,
    blocked: nodes.filter((n) => n !== node).map((n): [NodeId, NodeId] => [node, n]),
  };
}

/**
 * Jepsen's bridge: two halves that cannot talk to each other, joined by one node that talks to
 * both. With 5 nodes ({a,b} - c - {d,e}) every node still sees a majority, and the bridge node
 * sees everyone: two would-be leaders can each gather a quorum through it. Not drawn by
 * randomShape (kept stable so recorded simulator seeds replay); use it directly.
 */
export function bridge(nodes: readonly NodeId[], rng: Prng): PartitionShape {
  if (nodes.length < 3) throw new Error('bridge needs at least 3 nodes');
  const order = rng.shuffle([...nodes]);
  const middle = order[Math.floor(order.length / 2)]!;
  const left = order.slice(0, Math.floor(order.length / 2));
  const right = order.slice(Math.floor(order.length / 2) + 1);
  return {
    kind: 'bridge',
    description: `bridge {${left.join(',')}} - ${middle} - {${right.join(',')}}`,
    blocked: cutBetween(left, right),
  };
}

export const noPartition = (): PartitionShape => ({ kind: 'none', description: 'healed', blocked: [] });

/**
 * One shape drawn from the seed, for the chaos/sim fault loop. `leader` (when known) is the
 * node the leader-targeted shapes aim at; otherwise a random node.
 */
export function randomShape(nodes: readonly NodeId[], rng: Prng, leader?: NodeId): PartitionShape {
  const target = leader ?? rng.pick(nodes);
  const kinds: ShapeKind[] = ['isolate', 'majority-minority', 'one-way', 'inbound-isolate', 'outbound-isolate'];
  if (nodes.length >= 5) kinds.push('ring');
  switch (rng.pick(kinds)) {
    case 'isolate':
      return isolateNode(nodes, target);
    case 'majority-minority':
      return majorityMinority(nodes, rng, rng.chance(0.5) ? { minorityIncludes: target } : {});
    case 'ring':
      return ring(nodes, rng);
    case 'one-way':
      return randomOneWay(nodes, rng);
    case 'inbound-isolate':
      return inboundIsolate(nodes, target);
    default:
      return outboundIsolate(nodes, target);
  }
}

/** Directed reachability of a shape: reach.get(a).has(b) when a's messages reach b (a reaches a). */
export function reachability(nodes: readonly NodeId[], shape: PartitionShape): Map<NodeId, Set<NodeId>> {
  const cut = new Set(shape.blocked.map(([a, b]) => `${a}\u0000${b}`));
  const reach = new Map<NodeId, Set<NodeId>>();
  for (const a of nodes) reach.set(a, new Set(nodes.filter((b) => a === b || !cut.has(`${a}\u0000${b}`))));
  return reach;
}

/** Nodes a node can talk to in both directions, itself included: what it needs for a quorum. */
export function bidirectionalPeers(nodes: readonly NodeId[], shape: PartitionShape, node: NodeId): Set<NodeId> {
  const reach = reachability(nodes, shape);
  return new Set(nodes.filter((b) => reach.get(node)!.has(b) && reach.get(b)!.has(node)));
}

/** Whether `node` can complete a round trip with a majority (itself included). */
export function seesMajority(nodes: readonly NodeId[], shape: PartitionShape, node: NodeId): boolean {
  return bidirectionalPeers(nodes, shape, node).size > nodes.length / 2;
}
