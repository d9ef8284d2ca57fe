import { describe, expect, it } from 'vitest';
import { checkOperations } from '../../src/raft/linearizability/checker.js';
import { HistoryRecorder, parseHistory, serializeHistory } from '../../src/raft/linearizability/history-recorder.js';
import { kvModel, type KvInput, type KvOutput } from '../../src/raft/linearizability/kv-model.js';

describe('HistoryRecorder', () => {
  it('records calls and returns on the injected clock; failed ops vanish, unanswered ones are unknown', () => {
    let t = 0;
    const rec = new HistoryRecorder<KvInput, KvOutput>(() => t);
    const put = rec.invoke('a', { kind: 'put', key: 'x', value: '1' });
    t = 1;
    const rejected = rec.invoke('b', { kind: 'put', key: 'x', value: '2' });
    t = 2;
    rec.ok(put, { kind: 'ack' });
    rec.fail(rejected);
    const timedOut = rec.invoke('b', { kind: 'put', key: 'x', value: '3' });
    t = 5;
    rec.unknown(timedOut);
    const get = rec.invoke('a', { kind: 'get', key: 'x' });
    const stillOpen = rec.invoke('c', { kind: 'put', key: 'x', value: '4' });
    t = 6;
    rec.ok(get, { kind: 'get', value: '3' });
    expect(rec.pending).toBe(1);
    expect(stillOpen).toBeGreaterThan(get);

    const h = rec.operations();
    expect(h.map((o) => [o.clientId, o.call, o.return])).toEqual([
      ['a', 0, 2],
      ['b', 2, Infinity],
      ['a', 5, 6],
      ['c', 5, Infinity],
    ]);
    // The timed-out put took effect: the read saw it.
    expect(checkOperations(kvModel, h).result).toBe('ok');
    expect(() => rec.ok(put, { kind: 'ack' })).toThrow(/not pending/);
  });

  it('serializes unknown returns as null and reads them back as Infinity', () => {
    const h = [
      { clientId: 1, input: { kind: 'put', key: 'x', value: 'v' } as KvInput, call: 0, return: Infinity },
      { clientId: 2, input: { kind: 'get', key: 'x' } as KvInput, call: 1, return: 2, output: { kind: 'get', value: 'v' } as KvOutput },
    ];
    const text = serializeHistory(h);
    expect(text.split('\n')[0]).toContain('"return":null');
    expect(parseHistory<KvInput, KvOutput>(text)).toEqual(h);
  });
});
