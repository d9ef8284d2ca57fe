import { describe, expect, it } from 'vitest';
import { createPrng } from '../../src/raft/sim/prng.js';
import { SimNetwork } from '../../src/raft/sim/sim-network.js';
import {
  bidirectionalPeers,
  bridge,
  inboundIsolate,
  isolateNode,
  majorityMinority,
  oneWay,
  outboundIsolate,
  randomShape,
  reachability,
  ring,
  seesMajority,
} from '../../src/raft/sim/partition-shapes.js';

const FIVE = ['n1', 'n2', 'n3', 'n4', 'n5'];
const THREE = ['n1', 'n2', 'n3'];

describe('partition shapes', () => {
  it('isolating the leader leaves it alone and the others fully connected', () => {
    const s = isolateNode(FIVE, 'n3');
    expect([...bidirectionalPeers(FIVE, s, 'n3')]).toEqual(['n3']);
    for (const n of FIVE.filter((x) => x !== 'n3')) {
      expect(bidirectionalPeers(FIVE, s, n)).toEqual(new Set(FIVE.filter((x) => x !== 'n3')));
    }
    expect(seesMajority(FIVE, s, 'n3')).toBe(false);
    expect(seesMajority(FIVE, s, 'n1')).toBe(true);
  });

  it('a majority/minority split gives exactly the majority side a quorum, for 3 and 5 nodes', () => {
    for (const nodes of [THREE, FIVE]) {
      for (let seed = 0; seed < 30; seed++) {
        const s = majorityMinority(nodes, createPrng(seed), { minorityIncludes: seed % 2 ? 'n1' : undefined });
        const withQuorum = nodes.filter((n) => seesMajority(nodes, s, n));
        expect(withQuorum.length).toBeGreaterThan(nodes.length / 2);
        expect(withQuorum.length).toBeLessThan(nodes.length);
        if (seed % 2) expect(withQuorum).not.toContain('n1');
        // Sides are internally connected: each node's peers are exactly its side.
        for (const n of nodes) {
          const side = bidirectionalPeers(nodes, s, n);
          for (const m of side) expect(bidirectionalPeers(nodes, s, m)).toEqual(side);
        }
      }
    }
  });

  it('the 5-node ring gives every node exactly its two neighbours, so every node sees a majority', () => {
    for (let seed = 0; seed < 20; seed++) {
      const s = ring(FIVE, createPrng(seed));
      const order = s.description.replace('ring ', '').split('-');
      expect(new Set(order)).toEqual(new Set(FIVE));
      order.forEach((n, i) => {
        const peers = bidirectionalPeers(FIVE, s, n);
        expect(peers).toEqual(new Set([n, order[(i + 1) % 5]!, order[(i + 4) % 5]!]));
        expect(seesMajority(FIVE, s, n)).toBe(true);
      });
      // Overlapping, not nested: no single node reaches everyone.
      expect(FIVE.some((n) => bidirectionalPeers(FIVE, s, n).size === 5)).toBe(false);
    }
    expect(ring(THREE, createPrng(1)).blocked).toEqual([]);
  });

  it('a 5-node bridge joins two halves through one node that sees everyone', () => {
    for (let seed = 0; seed < 10; seed++) {
      const s = bridge(FIVE, createPrng(seed));
      const everyone = FIVE.filter((n) => bidirectionalPeers(FIVE, s, n).size === 5);
      expect(everyone).toHaveLength(1);
      // Each side sees itself plus the bridge: 3 of 5, a majority, yet the sides never meet.
      for (const n of FIVE) expect(seesMajority(FIVE, s, n)).toBe(true);
      const sides = FIVE.filter((n) => n !== everyone[0]).map((n) => bidirectionalPeers(FIVE, s, n));
      expect(sides.every((p) => p.size === 3)).toBe(true);
    }
  });

  it('one-way shapes cut a single direction', () => {
    const r = reachability(THREE, oneWay(THREE, 'n1', 'n2'));
    expect(r.get('n1')!.has('n2')).toBe(false);
    expect(r.get('n2')!.has('n1')).toBe(true);

    const deaf = reachability(FIVE, inboundIsolate(FIVE, 'n1'));
    expect(FIVE.every((n) => deaf.get('n1')!.has(n))).toBe(true);
    expect(FIVE.filter((n) => deaf.get(n)!.has('n1'))).toEqual(['n1']);

    const mute = outboundIsolate(FIVE, 'n2');
    expect(seesMajority(FIVE, mute, 'n2')).toBe(false);
    expect(reachability(FIVE, mute).get('n3')!.has('n2')).toBe(true);
  });

  it('random shapes are reproducible from the seed and applied faithfully by SimNetwork', () => {
    const kinds = new Set<string>();
    for (let seed = 0; seed < 60; seed++) {
      const a = randomShape(FIVE, createPrng(seed), 'n1');
      expect(randomShape(FIVE, createPrng(seed), 'n1')).toEqual(a);
      kinds.add(a.kind);
      const net = new SimNetwork<null>({ nodes: FIVE, rng: createPrng(seed) });
      net.applyBlocked(a.blocked);
      const reach = reachability(FIVE, a);
      for (const x of FIVE) for (const y of FIVE) expect(net.canReach(x, y)).toBe(reach.get(x)!.has(y));
    }
    expect(kinds.size).toBe(6);
  });
});
