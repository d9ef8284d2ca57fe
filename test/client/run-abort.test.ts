import { describe, expect, it } from 'vitest';
import { RunAbortedError } from '../../src/client/worker/handler-errors.js';
import { RunAbort } from '../../src/client/worker/run-abort.js';

describe('RunAbort: a run abort whose signal is made on first use', () => {
  it('fires a signal taken before the abort, with a RunAbortedError saying why', () => {
    const a = new RunAbort();
    const signal = a.signal;
    let fired: unknown;
    signal.addEventListener('abort', () => (fired = signal.reason));
    expect(a.cause).toBeUndefined();
    a.abort('lease-lost', 'lease gone');
    expect(signal.aborted).toBe(true);
    expect(fired).toBeInstanceOf(RunAbortedError);
    expect((fired as RunAbortedError).reason).toBe('lease-lost');
    expect((fired as RunAbortedError).message).toBe('lease gone');
    expect(a.cause).toBe('lease-lost');
  });

  it('hands out an already aborted signal when first asked after the abort', () => {
    const a = new RunAbort();
    a.abort('timeout', 'too slow');
    const signal = a.signal;
    expect(signal.aborted).toBe(true);
    expect((signal.reason as RunAbortedError).reason).toBe('timeout');
    expect(a.signal).toBe(signal);
  });

  it('keeps the first reason: a later abort changes nothing', () => {
    const a = new RunAbort();
    a.abort('cancelled', 'cancelled by user');
    a.abort('shutdown', 'worker stopping');
    expect(a.cause).toBe('cancelled');
    expect((a.signal.reason as RunAbortedError).message).toBe('cancelled by user');
  });
});
