import { describe, expect, it } from 'vitest';
import { createPrng } from '../../src/raft/sim/prng.js';
import { SimNetwork, type Delivery, type LinkFaults } from '../../src/raft/sim/sim-network.js';

const NODES = ['n1', 'n2', 'n3'];

/** Sends `count` numbered messages n1 -> n2, one per tick, and drains the network. */
function run(seed: number, faults: Partial<LinkFaults>, count = 2000): { got: Delivery<number>[]; net: SimNetwork<number> } {
  const net = new SimNetwork<number>({ nodes: NODES, rng: createPrng(seed), faults });
  const got: Delivery<number>[] = [];
  for (let t = 0; t < count; t++) {
    net.send('n1', 'n2', t, t);
    got.push(...net.deliverDue(t));
  }
  got.push(...net.deliverDue(Number.MAX_SAFE_INTEGER));
  return { got, net };
}

describe('SimNetwork', () => {
  it('a reliable link delivers every message once, in order, after its delay', () => {
    const { got, net } = run(1, { minDelay: 2, maxDelay: 5 }, 200);
    expect(got.map((d) => d.msg)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(got.every((d) => d.deliverAt - d.sentAt >= 2)).toBe(true);
    expect(net.counters()).toMatchObject({ sent: 200, delivered: 200, dropped: 0, duplicated: 0, reordered: 0 });
  });

  it('does not deliver before the due time', () => {
    const net = new SimNetwork<string>({ nodes: NODES, rng: createPrng(3), faults: { minDelay: 3, maxDelay: 3 } });
    net.send('n1', 'n3', 'hello', 10);
    expect(net.deliverDue(12)).toEqual([]);
    expect(net.nextDeliveryAt()).toBe(13);
    expect(net.deliverDue(13).map((d) => [d.from, d.to, d.msg])).toEqual([['n1', 'n3', 'hello']]);
  });

  it('the same seed replays the same faults and deliveries; another seed differs', () => {
    const faults = { dropRate: 0.1, duplicateRate: 0.1, reorderRate: 0.1, minDelay: 1, maxDelay: 6 };
    const a = run(77, faults);
    const b = run(77, faults);
    const c = run(78, faults);
    const trace = (r: typeof a) => r.got.map((d) => `${d.msg}@${d.deliverAt}`).join(',');
    expect(trace(a)).toBe(trace(b));
    expect(a.net.counters()).toEqual(b.net.counters());
    expect(trace(a)).not.toBe(trace(c));
  });

  it('injects drops, duplicates and reorders at about their rates', () => {
    const { got, net } = run(5, { dropRate: 0.2, duplicateRate: 0.1, reorderRate: 0.15, minDelay: 1, maxDelay: 4 }, 10_000);
    const c = net.counters();
    // Binomial 5-sigma bands around the expected counts.
    expect(Math.abs(c.dropped - 2000)).toBeLessThan(200);
    expect(Math.abs(c.duplicated - 800)).toBeLessThan(150); // 10% of the 8,000 not dropped
    expect(Math.abs(c.reordered - 1320)).toBeLessThan(200); // 15% of 8,800 queued copies
    expect(c.delivered).toBe(got.length);
    expect(got.length).toBe(c.sent - c.dropped + c.duplicated);
    // Reordering really lets later messages overtake earlier ones.
    const overtaken = got.filter((d, i) => i > 0 && d.msg < got[i - 1]!.msg && !d.duplicate).length;
    expect(overtaken).toBeGreaterThan(0);
    // Every message that was not dropped arrives at least once; duplicates arrive twice.
    const seen = new Map<number, number>();
    for (const d of got) seen.set(d.msg, (seen.get(d.msg) ?? 0) + 1);
    expect([...seen.values()].every((n) => n === 1 || n === 2)).toBe(true);
    expect(seen.size).toBe(c.sent - c.dropped);
  });

  it('keeps each link FIFO when reordering is off, even with random delays', () => {
    const { got } = run(9, { minDelay: 1, maxDelay: 20 }, 1000);
    expect(got.map((d) => d.msg)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('orders deliveries across links by (deliverAt, send sequence)', () => {
    const net = new SimNetwork<string>({ nodes: NODES, rng: createPrng(4), faults: { minDelay: 1, maxDelay: 1 } });
    net.send('n3', 'n1', 'c', 0);
    net.send('n1', 'n2', 'a', 0);
    net.send('n2', 'n3', 'b', 0);
    expect(net.deliverDue(1).map((d) => d.msg)).toEqual(['c', 'a', 'b']);
  });

  it('a partition cuts both directions, loses in-flight messages, and heal restores new traffic', () => {
    const net = new SimNetwork<string>({ nodes: NODES, rng: createPrng(2), faults: { minDelay: 5, maxDelay: 5 } });
    net.send('n1', 'n3', 'in-flight', 0);
    net.partition(['n1', 'n2'], ['n3']);
    net.send('n3', 'n1', 'cut', 1);
    net.send('n1', 'n2', 'same side', 1);
    expect(net.canReach('n1', 'n3')).toBe(false);
    expect(net.canReach('n3', 'n1')).toBe(false);
    expect(net.blockedLinks()).toEqual([
      ['n1', 'n3'],
      ['n2', 'n3'],
      ['n3', 'n1'],
      ['n3', 'n2'],
    ]);
    expect(net.deliverDue(10).map((d) => d.msg)).toEqual(['same side']);
    expect(net.counters().partitioned).toBe(2);
    net.heal();
    expect(net.blockedLinks()).toEqual([]);
    net.send('n3', 'n1', 'after heal', 11);
    expect(net.deliverDue(20).map((d) => d.msg)).toEqual(['after heal']);
  });

  it('a node left out of every partition group is isolated', () => {
    const net = new SimNetwork<string>({ nodes: NODES, rng: createPrng(2) });
    net.partition(['n1', 'n2']);
    expect(net.canReach('n1', 'n2')).toBe(true);
    expect(net.canReach('n3', 'n1') || net.canReach('n2', 'n3')).toBe(false);
  });

  it('a blocked link is one-way', () => {
    const net = new SimNetwork<string>({ nodes: NODES, rng: createPrng(2) });
    net.blockLink('n1', 'n2');
    net.send('n1', 'n2', 'lost', 0);
    net.send('n2', 'n1', 'arrives', 0);
    expect(net.deliverDue(5).map((d) => d.msg)).toEqual(['arrives']);
    net.unblockLink('n1', 'n2');
    net.send('n1', 'n2', 'now arrives', 5);
    expect(net.deliverDue(10).map((d) => d.msg)).toEqual(['now arrives']);
  });

  it('per-link faults override the defaults; discardInFlight empties a crashed node\'s queue', () => {
    const net = new SimNetwork<number>({ nodes: NODES, rng: createPrng(8) });
    net.setLinkFaults('n1', 'n2', { dropRate: 1 });
    for (let i = 0; i < 10; i++) {
      net.send('n1', 'n2', i, 0);
      net.send('n1', 'n3', i, 0);
    }
    expect(net.counters().dropped).toBe(10);
    expect(net.discardInFlight((d) => d.to === 'n3')).toBe(10);
    expect(net.deliverDue(100)).toEqual([]);
    expect(net.counters().discarded).toBe(10);
    expect(() => net.send('n1', 'n9', 0, 0)).toThrow(/unknown node/);
    expect(() => net.setDefaultFaults({ dropRate: 2 })).toThrow(RangeError);
  });
});
