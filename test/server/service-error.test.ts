import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { HeraldError } from '../../src/herald-error.js';
import { toServiceError } from '../../src/server/grpc/service-error.js';

describe('toServiceError', () => {
  it('maps a HeraldError to its status and carries the code and leader in trailers', () => {
    const e = toServiceError(new HeraldError('NOT_LEADER', 'not the leader; leader is n2 at 127.0.0.1:7202', { leaderId: 'n2', leaderAddress: '127.0.0.1:7202' }));
    expect(e.code).toBe(status.UNAVAILABLE);
    expect(e.details).toContain('leader is n2');
    expect(e.metadata.get('herald-error-code')).toEqual(['NOT_LEADER']);
    expect(e.metadata.get('herald-leader-address')).toEqual(['127.0.0.1:7202']);
    expect(e.metadata.get('herald-leader-id')).toEqual(['n2']);
  });

  it.each([
    ['INVALID_CRON', status.INVALID_ARGUMENT],
    ['JOB_NOT_FOUND', status.NOT_FOUND],
    ['ALREADY_EXISTS', status.ALREADY_EXISTS],
    ['VERSION_MISMATCH', status.FAILED_PRECONDITION],
    ['LIMIT_EXCEEDED', status.RESOURCE_EXHAUSTED],
  ] as const)('maps %s to gRPC status %i', (code, expected) => {
    expect(toServiceError(new HeraldError(code, 'x')).code).toBe(expected);
  });

  it('names the field a validation error is about', () => {
    const e = toServiceError(new HeraldError('INVALID_CRON', 'field 1 (minute) "61": value 61 is out of range 0-59', { field: 'spec.schedule.cron.expression' }));
    expect(e.details).toBe('spec.schedule.cron.expression: field 1 (minute) "61": value 61 is out of range 0-59');
    const already = toServiceError(new HeraldError('INVALID_ID', 'job_id: bad', { field: 'job_id' }));
    expect(already.details).toBe('job_id: bad');
  });

  it('hides unexpected errors behind INTERNAL without leaking their message', () => {
    const e = toServiceError(new TypeError('cannot read properties of undefined (secret path /var/x)'));
    expect(e.code).toBe(status.INTERNAL);
    expect(e.details).not.toContain('secret');
  });
});
