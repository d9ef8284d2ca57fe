import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JobState } from '../../src/gen/herald/v1/job.js';
import { Run, RunState } from '../../src/gen/herald/v1/run.js';
import { FsmDecodeError } from '../../src/fsm/commands/binary-codec.js';
import { decodeCommand, decodeResult, encodeCommand, encodeResult, type FsmCommand, type FsmResult } from '../../src/fsm/index.js';
import { Job } from '../../src/gen/herald/v1/job.js';
import { atSpec, everySpec, spec } from './fsm-test-kit.js';

const id = fc.stringMatching(/^[A-Za-z0-9._:-]{1,20}$/);
const str = fc.string({ maxLength: 30 });
const time = fc.integer({ min: 0, max: 999_999_999_999_999 });
const uint = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const bytes = fc.uint8Array({ maxLength: 40 });
const jobSpec = fc.oneof(
  fc.constant(everySpec(60_000, { labels: { team: 'a' }, priority: -5, payload: Buffer.from('xyz') })),
  fc.constant(atSpec(1_900_000_000_000, { retry: { maxAttempts: 5, backoffMultiplier: 1.5, nonRetryableErrorTypes: ['Fatal'] } })),
  fc.constant(spec({ schedule: { kind: { $case: 'cron', cron: { expression: '*/5 * * * *', timeZone: 'Europe/Berlin' } } }, jitterMs: 999 })),
);
const finishItem = fc.oneof(
  fc.record({ runId: str, fencingToken: uint, succeeded: fc.constant(true), output: bytes, errorType: fc.constant(''), errorMessage: fc.constant(''), retryable: fc.constant(false), timedOut: fc.constant(false) }),
  fc.record({ runId: str, fencingToken: uint, succeeded: fc.constant(false), output: fc.constant(new Uint8Array()), errorType: str, errorMessage: str, retryable: fc.boolean(), timedOut: fc.boolean() }),
);

const command: fc.Arbitrary<FsmCommand> = fc.oneof(
  fc.record({ type: fc.constant('putJob' as const), nowMs: time, jobId: id, spec: jobSpec, idempotencyKey: str }),
  fc.record({ type: fc.constant('putJobs' as const), nowMs: time, items: fc.array(fc.record({ jobId: id, spec: jobSpec, idempotencyKey: str }), { maxLength: 5 }) }),
  fc.record({ type: fc.constant('updateJob' as const), nowMs: time, jobId: id, spec: jobSpec, expectedVersion: uint }),
  fc.record({ type: fc.constant('deleteJob' as const), nowMs: time, jobId: id, expectedVersion: uint }),
  fc.record({ type: fc.constant('pauseJob' as const), nowMs: time, jobId: id, note: str }),
  fc.record({ type: fc.constant('resumeJob' as const), nowMs: time, jobId: id }),
  // With the caller's principal (auth on): a trailing field of the job commands.
  fc.record({ type: fc.constant('putJob' as const), nowMs: time, jobId: id, spec: jobSpec, idempotencyKey: str, principal: id }),
  fc.record({ type: fc.constant('putJobs' as const), nowMs: time, items: fc.array(fc.record({ jobId: id, spec: jobSpec, idempotencyKey: str }), { maxLength: 3 }), principal: id }),
  fc.record({ type: fc.constant('updateJob' as const), nowMs: time, jobId: id, spec: jobSpec, expectedVersion: uint, principal: id }),
  fc.record({ type: fc.constant('deleteJob' as const), nowMs: time, jobId: id, expectedVersion: uint, principal: id }),
  fc.record({ type: fc.constant('pauseJob' as const), nowMs: time, jobId: id, note: str, principal: id }),
  fc.record({ type: fc.constant('resumeJob' as const), nowMs: time, jobId: id, principal: id }),
  fc.record({ type: fc.constant('triggerJob' as const), nowMs: time, jobId: id, idempotencyKey: str, ignoreOverlap: fc.boolean() }),
  fc.record({ type: fc.constant('backfillJob' as const), nowMs: time, jobId: id, fromMs: time, toMs: time, maxRuns: uint, ignoreOverlap: fc.boolean() }),
  fc.record({ type: fc.constant('fireRuns' as const), nowMs: time, misfireThresholdMs: uint, items: fc.array(fc.record({ jobId: id, slotMs: time })) }),
  fc.record({ type: fc.constant('claimRuns' as const), nowMs: time, items: fc.array(fc.record({ runId: str, workerId: id, leaseDeadlineMs: time })) }),
  fc.record({ type: fc.constant('claimRuns' as const), nowMs: time, items: fc.array(fc.record({ runId: str, workerId: id, leaseDeadlineMs: time })), aheadMs: fc.integer({ min: 0, max: 2_000 }), defaultLeaseMs: fc.integer({ min: 1, max: 100_000 }) }),
  fc.record({ type: fc.constant('finishRuns' as const), nowMs: time, items: fc.array(finishItem) }),
  fc.record({ type: fc.constant('expireLeases' as const), nowMs: time, items: fc.array(fc.record({ runId: str, fencingToken: uint })) }),
  fc.record({ type: fc.constant('cancelRuns' as const), nowMs: time, items: fc.array(fc.record({ runId: str, reason: str })) }),
  fc.record({ type: fc.constant('markRuns' as const), nowMs: time, items: fc.array(fc.record({ runId: str, outcome: fc.constantFrom('missed' as const, 'skipped' as const), reason: str })) }),
  fc.record({ type: fc.constant('trimHistory' as const), nowMs: time, jobIds: fc.array(id), maxIdempotencyKeys: uint }),
  fc.record({ type: fc.constant('retryRuns' as const), nowMs: time, runIds: fc.array(str), onlyState: fc.integer({ min: 0, max: 8 }), ignoreOverlap: fc.boolean() }),
  fc.record({ type: fc.constant('raiseAlerts' as const), nowMs: time, items: fc.array(fc.record({ jobId: id, slotMs: time, reason: str })) }),
);

describe('command codec', () => {
  it('round-trips every command exactly', () => {
    fc.assert(
      fc.property(command, (cmd) => {
        const bytes = encodeCommand(cmd);
        expect(bytes[0]).toBe(1); // format version byte
        expect(decodeCommand(bytes)).toEqual(cmd);
        // Encoding is a function: the same command always gives the same bytes.
        expect(encodeCommand(decodeCommand(bytes))).toEqual(bytes);
      }),
      { numRuns: 500 },
    );
  });

  it('decodes a claim written before aheadMs existed (no trailing field) as one without a lead', () => {
    const items = [{ runId: 'a@1', workerId: 'w', leaseDeadlineMs: 30_000 }];
    const old = encodeCommand({ type: 'claimRuns', nowMs: 5, items });
    expect(encodeCommand({ type: 'claimRuns', nowMs: 5, items, aheadMs: 0 })).toEqual(old);
    expect(decodeCommand(old)).toEqual({ type: 'claimRuns', nowMs: 5, items });
    expect(decodeCommand(encodeCommand({ type: 'claimRuns', nowMs: 5, items, aheadMs: 100 }))).toMatchObject({ aheadMs: 100, defaultLeaseMs: 0 });
    expect(decodeCommand(encodeCommand({ type: 'claimRuns', nowMs: 5, items, defaultLeaseMs: 30_000 }))).toMatchObject({ aheadMs: 0, defaultLeaseMs: 30_000 });
  });

  it('is compact: a 10,000-slot fire batch stays near 20 bytes per item', () => {
    const items = Array.from({ length: 10_000 }, (_, i) => ({ jobId: `job-${i}`, slotMs: 1_900_000_000_000 + i }));
    const bytes = encodeCommand({ type: 'fireRuns', nowMs: 1_900_000_000_000, misfireThresholdMs: 60_000, items });
    expect(bytes.length).toBeLessThan(10_000 * 20);
  });

  it('rejects truncated, unknown-version and trailing-garbage input with FsmDecodeError', () => {
    const good = encodeCommand({ type: 'pauseJob', nowMs: 5, jobId: 'j', note: 'n' });
    for (let n = 0; n < good.length; n++) expect(() => decodeCommand(good.slice(0, n))).toThrow(FsmDecodeError);
    expect(() => decodeCommand(Uint8Array.of(9, ...good.slice(1)))).toThrow(/version/);
    expect(() => decodeCommand(Uint8Array.of(1, 200, 0))).toThrow(/tag/);
    // Reserved tags: 11 (renewLeases, removed) and 17 (apply effects) decode as unknown.
    expect(() => decodeCommand(Uint8Array.of(1, 11, 0, 0))).toThrow(/tag/);
    expect(() => decodeCommand(Uint8Array.of(1, 17, 0, 0))).toThrow(/tag/);
    expect(() => decodeCommand(Uint8Array.of(...good, 0))).toThrow(/trailing/);
  });

  it('never throws anything but FsmDecodeError on random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 1, max: 18 }), (tail, tag) => {
        try {
          decodeCommand(Uint8Array.of(1, tag, ...tail));
        } catch (e) {
          expect(e).toBeInstanceOf(FsmDecodeError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('result codec', () => {
  const job = Job.fromPartial({ id: 'j', spec: everySpec(1000), state: JobState.JOB_STATE_ACTIVE, version: 3, activeRuns: 2 });
  const run = Run.fromPartial({ id: 'j@5', jobId: 'j', state: RunState.RUN_STATE_RUNNING, fencingToken: 42, attempts: [{ number: 1, workerId: 'w', fencingToken: 42 }] });
  const claimed = {
    id: 'j@5', jobId: 'j', taskType: 't', slotUnixMs: 5, scheduledUnixMs: 6, notBeforeUnixMs: 7, attempt: 1, fencingToken: 42, latenessMs: 3,
    leaseDeadlineUnixMs: 30_007, leaseDurationMs: 30_000, executionTimeoutMs: 100, payload: Uint8Array.of(1, 2), manual: false, backfilled: true,
  };
  const err = { code: 'STALE_FENCING_TOKEN' as const, message: 'm', reason: 'STALE_TOKEN' };
  const results: FsmResult[] = [
    { type: 'empty' },
    { type: 'job', job, created: true },
    { type: 'job', error: { code: 'VERSION_MISMATCH', message: 'x', reason: '' }, created: false },
    { type: 'jobs', items: [{ job, created: true }, { error: err, created: false }, { job, created: false }] },
    { type: 'delete', cancelledRuns: 2, signals: [{ runId: 'j@5', workerId: 'w', fencingToken: 42 }] },
    { type: 'trigger', run, created: false },
    { type: 'backfill', runIds: ['j@1~b', 'j@2~b'] },
    { type: 'fire', items: [{ created: ['j@5'], missed: ['j@1'], skipped: [], nextFireMs: 9, dispatch: { taskType: 't', priority: -3, jittered: false, allowsOverlap: true, jitterWindowMs: 0 } }, { error: err, created: [], missed: [], skipped: [], nextFireMs: 0 }], signals: [] },
    { type: 'claim', items: [{ run: claimed }, { error: err }] },
    { type: 'runItems', items: [{ state: RunState.RUN_STATE_SUCCEEDED }, { error: err, state: RunState.RUN_STATE_UNSPECIFIED }] },
    { type: 'cancel', items: [{ run }], signals: [{ runId: 'j@5', workerId: 'w', fencingToken: 42 }] },
    { type: 'trim', runsTrimmed: 3, idempotencyKeysTrimmed: 4 },
    { type: 'retry', items: [{ run: { ...run, redriveCount: 3, redrivenUnixMs: 77 } }, { error: err }] },
    { type: 'rejected', error: err },
  ];
  it.each(results.map((r) => [r.type, r] as const))('round-trips %s', (_, r) => {
    const bytes = encodeResult(r);
    expect(decodeResult(bytes)).toEqual(r);
  });
  it('no-op and config entries get the empty result', () => {
    expect(encodeResult({ type: 'empty' }).length).toBe(0);
  });
});

describe('encodeCommand buffers', () => {
  it('gives every command a buffer of its own, never a slice of a shared slab (the leader keeps commands in its log until compaction)', () => {
    const small = encodeCommand({ type: 'deleteJob', nowMs: 1, jobId: 'j', expectedVersion: 0 });
    expect(small.byteOffset).toBe(0);
    expect(small.buffer.byteLength).toBe(small.byteLength);
    expect(decodeCommand(small)).toMatchObject({ type: 'deleteJob', jobId: 'j' });
  });
});
