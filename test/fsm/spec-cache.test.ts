// Decoded specs shared by content: jobs with equal spec bytes read through one cache share one
// spec object; each state machine has its own cache, bounded, so two machines in one process
// share nothing mutable.
import { describe, expect, it } from 'vitest';
import { JobSpec } from '../../src/gen/herald/v1/job.js';
import { MAX_SHARED_SPECS, SpecCache } from '../../src/fsm/commands/spec-cache.js';
import { everySpec } from './fsm-test-kit.js';

const bytesOf = (spec: JobSpec): Uint8Array => JobSpec.encode(spec).finish();

describe('SpecCache', () => {
  it('hands equal spec bytes the same decoded object, and a copy of the bytes it keeps', () => {
    const cache = new SpecCache();
    const a = bytesOf(everySpec(60_000, { taskType: 'report' }));
    const b = a.slice();
    const first = cache.specOf(a)!;
    a.fill(0); // the caller's bytes may be reused: the cache kept its own
    expect(cache.specOf(b)).toBe(first);
    expect(first.taskType).toBe('report');
    expect(cache.specOf(new Uint8Array())).toBeUndefined();
  });

  it('is per instance: two caches decode their own objects', () => {
    const bytes = bytesOf(everySpec(60_000));
    const one = new SpecCache();
    const two = new SpecCache();
    expect(one.specOf(bytes)).not.toBe(two.specOf(bytes));
    expect(one.specOf(bytes)).toEqual(two.specOf(bytes));
  });

  it('stays within its bound, starting over when full', () => {
    const cache = new SpecCache();
    for (let i = 0; i <= MAX_SHARED_SPECS; i++) cache.specOf(bytesOf(everySpec(1000 + i)));
    expect(cache.size).toBeLessThanOrEqual(MAX_SHARED_SPECS);
    expect(cache.size).toBe(1);
  });
});
