import { describe, expect, it } from 'vitest';
import { checkOperations, describeResult } from '../../src/raft/linearizability/checker.js';
import { kvModel, type KvInput, type KvOperation, type KvOutput } from '../../src/raft/linearizability/kv-model.js';

// Compact history notation: [client, call, return, input, output]; return Infinity = unknown.
const op = (clientId: number, call: number, ret: number, input: KvInput, output?: KvOutput): KvOperation => ({
  clientId,
  call,
  return: ret,
  input,
  ...(output ? { output } : {}),
});
const put = (key: string, value: string): KvInput => ({ kind: 'put', key, value });
const get = (key: string): KvInput => ({ kind: 'get', key });
const append = (key: string, value: string): KvInput => ({ kind: 'append', key, value });
const cas = (key: string, expected: string | null, value: string | null): KvInput => ({ kind: 'cas', key, expected, value });
const ack: KvOutput = { kind: 'ack' };
const read = (value: string | null): KvOutput => ({ kind: 'get', value });
const swapped = (ok: boolean): KvOutput => ({ kind: 'cas', ok });

const check = (h: KvOperation[]) => checkOperations(kvModel, h);

describe('linearizable KV histories', () => {
  it('an empty history and a sequential one are linearizable', () => {
    expect(check([]).result).toBe('ok');
    expect(
      check([op(1, 0, 1, put('x', 'a'), ack), op(1, 2, 3, get('x'), read('a')), op(2, 4, 5, get('y'), read(null))]).result,
    ).toBe('ok');
  });

  it('a read concurrent with a write may see either value', () => {
    for (const seen of [null, 'a']) {
      expect(check([op(1, 0, 10, put('x', 'a'), ack), op(2, 2, 4, get('x'), read(seen))]).result).toBe('ok');
    }
  });

  it('ops that only touch at one instant count as concurrent', () => {
    expect(check([op(1, 0, 5, put('x', 'a'), ack), op(2, 5, 6, get('x'), read(null))]).result).toBe('ok');
  });

  it('concurrent writes may linearize in the opposite order of their calls', () => {
    const h = [op(1, 0, 10, put('x', 'a'), ack), op(2, 1, 9, put('x', 'b'), ack), op(3, 11, 12, get('x'), read('a'))];
    expect(check(h).result).toBe('ok');
  });
});

describe('non-linearizable KV histories', () => {
  it('a stale read: a value overwritten before the read began', () => {
    const h = [op(1, 0, 1, put('x', '1'), ack), op(1, 2, 3, put('x', '2'), ack), op(2, 4, 5, get('x'), read('1'))];
    const r = check(h);
    expect(r.result).toBe('illegal');
    if (r.result !== 'illegal') return;
    expect(r.explanation.longestPrefix).toEqual([h[0], h[1]]);
    expect(r.explanation.stuck).toBe(h[2]);
    expect(r.explanation.stateAfterPrefix).toBe('2');
    const text = describeResult(kvModel, r);
    expect(text).toContain('cannot place: client 2: get(x) -> "1"');
    expect(text).toContain('state after it: "2"');
  });

  it('a long prefix is summarised down to its tail, where the violation is', () => {
    const puts = Array.from({ length: 30 }, (_, i) => op(1, 2 * i, 2 * i + 1, put('x', `v${i}`), ack));
    const r = check([...puts, op(2, 100, 101, get('x'), read('v3'))]);
    expect(r.result).toBe('illegal');
    const text = describeResult(kvModel, r, { tail: 5 });
    expect(text).toContain('longest linearizable prefix (30 ops)');
    expect(text).toContain('... 25 earlier ops');
    expect(text).toContain('put(x, "v29")');
    expect(text).not.toContain('put(x, "v24")');
  });

  it('a lost write: an acknowledged append missing from a later read', () => {
    const h = [op(1, 0, 1, append('x', 'a'), ack), op(2, 2, 3, append('x', 'b'), ack), op(3, 4, 5, get('x'), read('b'))];
    expect(check(h).result).toBe('illegal');
  });

  it('a read-your-write violation: a client does not see its own acknowledged put', () => {
    expect(check([op(1, 0, 2, put('x', 'v'), ack), op(1, 3, 4, get('x'), read(null))]).result).toBe('illegal');
  });

  it('new-then-old: once a read saw the new value, a later read may not see the old one', () => {
    const h = [op(1, 0, 100, put('x', 'new'), ack), op(2, 10, 20, get('x'), read('new')), op(3, 30, 40, get('x'), read(null))];
    expect(check(h).result).toBe('illegal');
  });

  it('two compare-and-sets from the same expected value cannot both succeed', () => {
    const both = [op(1, 0, 5, cas('x', null, 'a'), swapped(true)), op(2, 0, 5, cas('x', null, 'b'), swapped(true))];
    expect(check(both).result).toBe('illegal');
    const oneWins = [op(1, 0, 5, cas('x', null, 'a'), swapped(true)), op(2, 0, 5, cas('x', null, 'b'), swapped(false)), op(3, 6, 7, get('x'), read('a'))];
    expect(check(oneWins).result).toBe('ok');
  });

  it('reports the failing key\'s partition while the other keys are fine', () => {
    const h = [
      op(1, 0, 1, put('a', '1'), ack),
      op(1, 2, 3, get('a'), read('1')),
      op(2, 0, 1, put('b', '1'), ack),
      op(2, 2, 3, get('b'), read('2')),
    ];
    const r = check(h);
    expect(r.result).toBe('illegal');
    if (r.result === 'illegal') {
      expect(r.partitions).toBe(2);
      expect(r.explanation.partition).toBe(1);
      expect(r.explanation.stuck).toBe(h[3]);
    }
  });
});

describe('ops with unknown outcome', () => {
  const lost = op(1, 0, Infinity, put('x', 'u'));

  it('may have taken effect', () => {
    expect(check([lost, op(2, 5, 6, get('x'), read('u'))]).result).toBe('ok');
  });

  it('may never have taken effect', () => {
    expect(check([lost, op(2, 5, 6, get('x'), read(null))]).result).toBe('ok');
  });

  it('may take effect long after the client gave up, but only once', () => {
    const late = [lost, op(2, 5, 6, get('x'), read(null)), op(2, 50, 51, get('x'), read('u'))];
    expect(check(late).result).toBe('ok');
    const flapping = [lost, op(2, 5, 6, get('x'), read('u')), op(2, 50, 51, get('x'), read(null))];
    expect(check(flapping).result).toBe('illegal');
  });

  it('cannot take effect before it was called', () => {
    expect(check([op(2, 0, 1, get('x'), read('u')), op(1, 2, Infinity, put('x', 'u'))]).result).toBe('illegal');
  });

  it('timed-out writes do not hide a lost acknowledged write', () => {
    const timedOut = Array.from({ length: 8 }, (_, i) => op(i, i, Infinity, put('x', `u${i}`)));
    const lostFinal = [...timedOut, op(20, 100, 101, put('x', 'final'), ack), op(21, 102, 103, get('x'), read(null))];
    expect(check(lostFinal).result).toBe('illegal');
    const lateTimeout = [...timedOut, op(20, 100, 101, put('x', 'final'), ack), op(21, 102, 103, get('x'), read('u7'))];
    expect(check(lateTimeout).result).toBe('ok');
  });

  it('an unknown read constrains nothing', () => {
    expect(check([op(1, 0, 1, put('x', 'a'), ack), op(2, 0, Infinity, get('x'))]).result).toBe('ok');
  });
});

describe('budget and input validation', () => {
  it('gives up with unknown(timeout) when the step budget runs out', () => {
    // Six mutually concurrent appends and a read that pins one exact order: much search.
    const writes = Array.from({ length: 6 }, (_, i) => op(i, 0, 100, append('x', String.fromCharCode(97 + i)), ack));
    const h = [...writes, op(99, 101, 102, get('x'), read('fedcba'))];
    const tight = checkOperations(kvModel, h, { maxSteps: 50 });
    expect(tight).toMatchObject({ result: 'unknown', reason: 'timeout' });
    expect(checkOperations(kvModel, h).result).toBe('ok');
  });

  it('a deadline budget reads only the injected clock', () => {
    let t = 0;
    const writes = Array.from({ length: 6 }, (_, i) => op(i, 0, 100, append('x', String.fromCharCode(97 + i)), ack));
    const h = [...writes, op(99, 101, 102, get('x'), read('zzz'))];
    const r = checkOperations(kvModel, h, { deadline: { now: () => (t += 10), ms: 5 } });
    expect(r.result).toBe('unknown');
  });

  it('rejects an op that returns before it is called', () => {
    expect(() => check([op(1, 5, 4, get('x'), read(null))])).toThrow(RangeError);
  });
});
