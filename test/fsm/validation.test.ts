import fc from 'fast-check';
// The validation module the API layer calls before proposing: each failure is a HeraldError that
// maps to INVALID_ARGUMENT, names the field and says what is wrong.
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { HeraldError } from '../../src/herald-error.js';
import { grpcStatusOf } from '../../src/server/grpc/grpc-status-map.js';
import { requireRunId, validateId, validateIdempotencyKey, validateJobSpec, validateNote, parseRunId } from '../../src/fsm/index.js';
import { RUN_ID_PATTERN } from '../../src/fsm/commands/run-id.js';
import { atSpec, everySpec, spec } from './fsm-test-kit.js';
import { ScheduleCaches } from '../../src/fsm/schedule/index.js';

const caches = new ScheduleCaches();

function errorOf(fn: () => void): HeraldError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(HeraldError);
    return e as HeraldError;
  }
  throw new Error('expected a HeraldError');
}

describe('ids', () => {
  it.each(['a', 'job-1', 'A.b_c:d-9', 'x'.repeat(128)])('accepts %s', (id) => expect(() => validateId(id, 'job_id')).not.toThrow());
  it.each(['', 'x'.repeat(129), 'a/b', 'a b', 'é', 'a@1', 'a~b', 'a\0b'])('refuses %j', (id) => {
    const e = errorOf(() => validateId(id, 'job_id'));
    expect(e.code).toBe('INVALID_ID');
    expect(e.details.field).toBe('job_id');
    expect(grpcStatusOf[e.code]).toBe(status.INVALID_ARGUMENT);
  });
  it('idempotency keys: printable ASCII, 1–128; empty means none', () => {
    expect(() => validateIdempotencyKey('')).not.toThrow();
    expect(() => validateIdempotencyKey('retry #1 / 2024')).not.toThrow();
    expect(errorOf(() => validateIdempotencyKey('x'.repeat(129))).code).toBe('INVALID_ARGUMENT');
    expect(errorOf(() => validateIdempotencyKey('nul\0')).code).toBe('INVALID_ARGUMENT');
  });
  it('notes are at most 1024 characters', () => {
    expect(() => validateNote('x'.repeat(1024), 'note')).not.toThrow();
    expect(errorOf(() => validateNote('x'.repeat(1025), 'note')).message).toMatch(/note: at most 1024/);
  });
});

describe('run ids', () => {
  it('parses the three forms and refuses anything else', () => {
    expect(parseRunId('job-1@1700000000000')).toEqual({ jobId: 'job-1', slotMs: 1700000000000, suffix: '', kind: 'scheduled' });
    expect(parseRunId('j@5~m12')).toMatchObject({ kind: 'manual', suffix: 'm12', slotMs: 5 });
    expect(parseRunId('j@5~b')).toMatchObject({ kind: 'backfill' });
    for (const bad of ['j', 'j@', 'j@05', 'j@5~x', 'j@5~m01', '@5', 'a/b@5', 'j@1e3', 'j@-1', `j@${'9'.repeat(16)}`]) {
      expect(parseRunId(bad), bad).toBeUndefined();
    }
    expect(errorOf(() => requireRunId('nope')).code).toBe('INVALID_ID');
  });

  it('accepts exactly what the run id grammar (RUN_ID_PATTERN) accepts, with the same parts', () => {
    // Strings over the characters where the grammar has edges: id characters, the separators,
    // digits (leading zeros), suffix letters, and characters no id may hold.
    const char = fc.constantFrom('a', 'Z', '0', '1', '9', '.', '_', ':', '-', '@', '~', 'm', 'b', '/', ' ', 'é', '\0');
    const noise = fc.array(char, { maxLength: 24 }).map((cs) => cs.join(''));
    const digits = (max: number) => fc.array(fc.constantFrom('0', '1', '5', '9'), { minLength: 0, maxLength: max }).map((d) => d.join(''));
    const shaped = fc
      .tuple(fc.oneof(noise, fc.constantFrom('x'.repeat(128), 'x'.repeat(129), 'job-1')), digits(17), fc.constantFrom('', '~b', '~m', '~x', '~bb'), digits(17))
      .map(([job, slot, suf, n]) => `${job}@${slot}${suf}${suf === '~m' ? n : ''}`);
    fc.assert(
      fc.property(fc.oneof(noise, shaped), (id) => {
        const m = RUN_ID_PATTERN.exec(id);
        const p = parseRunId(id);
        if (!m) {
          expect(p, id).toBeUndefined();
        } else {
          const suffix = m[3] ?? '';
          expect(p, id).toEqual({ jobId: m[1], slotMs: Number(m[2]), suffix, kind: suffix === '' ? 'scheduled' : suffix === 'b' ? 'backfill' : 'manual' });
        }
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('job spec', () => {
  it('accepts a complete, sensible spec', () => {
    expect(() =>
      validateJobSpec(everySpec(60_000, { retry: { maxAttempts: 5, initialBackoffMs: 500, maxBackoffMs: 60_000, backoffMultiplier: 1.5 }, labels: { team: 'core', 'app.kubernetes.io/name': 'x' }, priority: -1000, jitterMs: 1000 }), caches),
    ).not.toThrow();
    expect(() => validateJobSpec(atSpec(1_900_000_000_000), caches)).not.toThrow();
    expect(() => validateJobSpec(spec({ schedule: { kind: { $case: 'cron', cron: { expression: '0 30 2 * * 1-5', timeZone: 'Australia/Lord_Howe' } } } }), caches)).not.toThrow();
  });

  it.each([
    ['no spec', undefined, 'INVALID_SPEC', 'spec'],
    ['task type charset', spec({ taskType: 'has space' }), 'INVALID_ID', 'spec.task_type'],
    ['payload', spec({ payload: Buffer.alloc(256 * 1024 + 1) }), 'PAYLOAD_TOO_LARGE', 'spec.payload'],
    ['interval too short', everySpec(999), 'INVALID_SPEC', 'spec.schedule.every.interval_ms'],
    ['at missing', atSpec(0), 'INVALID_SPEC', 'spec.schedule.at.at_unix_ms'],
    ['end before start', everySpec(1000, { startUnixMs: 2000, endUnixMs: 1000 }), 'INVALID_SPEC', 'spec.end_unix_ms'],
    ['negative start', everySpec(1000, { startUnixMs: -1 }), 'INVALID_SPEC', 'spec.start_unix_ms'],
    ['multiplier below 1', everySpec(1000, { retry: { backoffMultiplier: 0.5 } }), 'INVALID_SPEC', 'spec.retry.backoff_multiplier'],
    ['lease too short', everySpec(1000, { leaseDurationMs: 10 }), 'INVALID_SPEC', 'spec.lease_duration_ms'],
    ['unknown misfire policy', everySpec(1000, { misfirePolicy: 9 }), 'INVALID_SPEC', 'spec.misfire_policy'],
    ['unknown overlap policy', everySpec(1000, { overlapPolicy: 9 }), 'INVALID_SPEC', 'spec.overlap_policy'],
    ['retention', everySpec(1000, { retention: { maxRuns: 20_000 } }), 'INVALID_SPEC', 'spec.retention.max_runs'],
    ['priority', everySpec(1000, { priority: -1001 }), 'INVALID_SPEC', 'spec.priority'],
    ['label value', everySpec(1000, { labels: { k: 'v'.repeat(257) } }), 'INVALID_SPEC', 'spec.labels["k"]'],
    ['too many labels', everySpec(1000, { labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }), 'INVALID_SPEC', 'spec.labels'],
    ['cron syntax', spec({ schedule: { kind: { $case: 'cron', cron: { expression: 'every day', timeZone: '' } } } }), 'INVALID_CRON', 'spec.schedule.cron.expression'],
    ['time zone', spec({ schedule: { kind: { $case: 'cron', cron: { expression: '* * * * *', timeZone: 'Europe/Atlantis' } } } }), 'UNKNOWN_TIME_ZONE', 'spec.schedule.cron.time_zone'],
  ])('refuses %s', (_, s, code, field) => {
    const e = errorOf(() => validateJobSpec(s as never, caches));
    expect(e.code).toBe(code);
    expect(e.details.field).toBe(field);
    expect(e.message.length).toBeGreaterThan(10);
    expect(grpcStatusOf[e.code]).toBe(status.INVALID_ARGUMENT);
  });

  it('uses the configured payload limit', () => {
    expect(errorOf(() => validateJobSpec(spec({ payload: Buffer.alloc(11) }), caches, { maxPayloadBytes: 10 })).message).toMatch(/11 bytes; the limit is 10/);
  });
});
