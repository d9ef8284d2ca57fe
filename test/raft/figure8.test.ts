// The paper's Figure 8: a leader must not count replicas to commit an entry of an earlier term;
// only committing an entry of its own term commits the ones before it.
import { describe, expect, it } from 'vitest';
import type { CoreMutation } from '../../src/raft/core/mutations.js';
import type { Message } from '../../src/raft/types.js';
import { TestCluster } from './harness.js';

function figure8(mutations: ReadonlySet<CoreMutation>) {
  const c = new TestCluster(5, { mutations });
  c.campaign('a'); // term 1, no-op at index 1 committed everywhere
  // (a) a (term 1) gets index 2 to b only, then is cut off.
  for (const id of ['c', 'd', 'e']) {
    c.cut.add(`a->${id}`);
    c.cut.add(`${id}->a`);
  }
  c.propose('a', 'x');
  c.isolate('a');
  // (b) e is elected for term 2 by c and d, writes its no-op at index 2 locally, and is cut off.
  const noAppendFromE = (m: Message) => !(m.from === 'e' && m.type === 'app');
  c.node('e').raft.campaign();
  c.stabilize(noAppendFromE);
  expect(c.node('e').raft.status()).toMatchObject({ role: 'leader', term: 2, lastIndex: 2 });
  c.isolate('e');
  // (c) a comes back, wins term 3 (b and c vote), and gets index 2 (term 1) onto c -- but not
  // its own no-op at index 3: now index 2 sits on a majority (a, b, c).
  c.cut.clear();
  c.restart('a');
  c.isolate('e');
  c.cut.add('a->d');
  c.cut.add('d->a');
  const onlyIndex2 = (m: Message) => {
    if (m.type === 'app') m.entries = m.entries.filter((e) => e.index <= 2);
    return true;
  };
  // Term 2 is taken (c and d voted for e), so a's first campaign loses; the second wins term 3.
  c.node('a').raft.campaign();
  c.stabilize(onlyIndex2);
  c.node('a').raft.campaign();
  c.stabilize(onlyIndex2);
  const a = c.node('a').raft.status();
  expect(a.role).toBe('leader');
  expect(a.term).toBe(3);
  expect(c.node('c').storage.term(2)).toBe(1);
  return { c, commitOfA: a.commit };
}

/** (d) a dies; e (last term 2) wins votes from b, c, d (last term 1): it never held index 2@1. */
function electE(c: TestCluster, filter?: (m: Message) => boolean) {
  c.cut.clear();
  c.isolate('a');
  c.restart('e');
  c.node('e').raft.campaign(); // term 3 is taken (b and c voted for a) ...
  c.stabilize(filter);
  c.node('e').raft.campaign(); // ... term 4 wins: e's last term 2 beats their last term 1
  c.stabilize(filter);
  expect(c.node('e').raft.status()).toMatchObject({ role: 'leader', term: 4 });

}

describe('Figure 8: committing entries from previous terms', () => {
  it('a leader does not commit an old-term entry that reached a majority; the later overwrite is safe', () => {
    const { c, commitOfA } = figure8(new Set());
    expect(commitOfA).toBe(1);
    electE(c);
    c.tickAll(3);
    // a never applied index 2, so nothing applied is ever contradicted.
    expect(c.node('a').applied.map((e) => e.index)).toEqual([1]);
    for (const id of ['b', 'c', 'd', 'e']) expect(c.node(id).storage.term(2)).toBe(2);
  });

  it('with the commit-previous-term mutation the same schedule loses a committed, applied entry', () => {
    const { c, commitOfA } = figure8(new Set(['commit-previous-term']));
    expect(commitOfA).toBe(2);
    expect(c.node('a').applied.find((e) => e.index === 2)!.term).toBe(1);
    // e wins without the committed entry (leader completeness is broken) and overwrites it.
    electE(c);
    const termsApplied = c.ids.map((id) => c.node(id).applied.find((e) => e.index === 2)?.term);
    // a, b and c applied 2@1 (a told them it was committed); d and e applied e's 2@2.
    expect(termsApplied).toEqual([1, 1, 1, 2, 2]);
  });
});
