// The writer the generated gRPC serializers encode with (src/uninitialized-bytes.ts) reaches into
// @bufbuild/protobuf's BinaryWriter: these scenarios say whether it is in place and whether it
// writes exactly the bytes the stock writer writes.
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { Job, JobSpec, JobState } from '../../src/gen/herald/v1/job.js';
import { CreateJobsResponse, JobServiceService } from '../../src/gen/herald/v1/job_service.js';
import { UninitializedWriter, uninitializedBytes } from '../../src/uninitialized-bytes.js';

function job(i: number, payloadBytes: number): Job {
  return Job.fromPartial({
    id: `job-${String(i).padStart(8, '0')}`,
    spec: JobSpec.fromPartial({
      taskType: `type-${i % 8}`,
      labels: { shard: String(i % 16), team: 'ünïcode-✓' },
      // Over 127 bytes: a nested message whose length prefix widens after it is written.
      payload: Buffer.alloc(payloadBytes, i % 251),
      retry: { maxAttempts: 5, initialBackoffMs: 1000, backoffMultiplier: 1.5 + i / 7 }, // a double: the writer's DataView path
      schedule: { kind: { $case: 'every', every: { intervalMs: 86_400_000, anchorUnixMs: 1_800_000_000_000 + i } } },
    }),
    state: JobState.JOB_STATE_ACTIVE,
    version: 1 + i,
    createdUnixMs: 1_790_000_000_000 + i,
    nextFireUnixMs: 1_800_000_000_000 + i,
  });
}

function response(n: number, payloadBytes: number): CreateJobsResponse {
  return { results: Array.from({ length: n }, (_, i) => ({ job: job(i, payloadBytes), code: i % 3, message: i % 3 ? `item ${i} failed` : '', created: i % 2 === 0 })) };
}

describe('uninitialized buffers for the generated encoders', () => {
  it('is in place on the installed @bufbuild/protobuf (when this fails, the library changed: revisit src/uninitialized-bytes.ts)', () => {
    expect(UninitializedWriter.active).toBe(true);
    expect(Object.prototype.hasOwnProperty.call(UninitializedWriter.prototype, 'ensureCapacity')).toBe(true);
    expect(Object.prototype.hasOwnProperty.call(UninitializedWriter.prototype, 'finish')).toBe(true);
  });

  it('writes byte for byte what the stock writer writes, from one small message to megabytes', () => {
    for (const [n, payload] of [
      [1, 0],
      [3, 200],
      [1000, 16],
      [2000, 700],
    ] as const) {
      const msg = response(n, payload);
      const stock = CreateJobsResponse.encode(msg, new BinaryWriter()).finish();
      const ours = CreateJobsResponse.encode(msg, new UninitializedWriter()).finish();
      expect(ours.length).toBe(stock.length);
      expect(Buffer.from(ours).equals(Buffer.from(stock))).toBe(true);
      expect(CreateJobsResponse.decode(ours)).toEqual(CreateJobsResponse.decode(stock));
    }
  });

  it('serves message after message from one writer, each output its own bytes', () => {
    const w = new UninitializedWriter();
    const big = CreateJobsResponse.encode(response(500, 300), w).finish();
    const small = CreateJobsResponse.encode(response(2, 10), w).finish();
    const bigAgain = CreateJobsResponse.encode(response(500, 300), w).finish();
    expect(CreateJobsResponse.decode(small)).toEqual(response(2, 10));
    expect(Buffer.from(big).equals(Buffer.from(bigAgain))).toBe(true);
    expect(big.buffer).not.toBe(bigAgain.buffer);
    expect(CreateJobsResponse.decode(big)).toEqual(response(500, 300));
  });

  it('is what the gRPC serializers encode with', () => {
    const msg = response(300, 50);
    const bytes = JobServiceService.createJobs.responseSerialize(msg);
    expect(bytes.equals(Buffer.from(CreateJobsResponse.encode(msg, new BinaryWriter()).finish()))).toBe(true);
    expect(JobServiceService.createJobs.responseSerialize.toString()).toContain('UninitializedWriter');
  });

  it('hands out plain arrays spanning their whole ArrayBuffer', () => {
    for (const n of [0, 10, 4095, 4096, 1 << 20]) {
      const b = uninitializedBytes(n);
      expect(b.length).toBe(n);
      expect(Buffer.isBuffer(b)).toBe(false);
      expect(b.byteOffset).toBe(0);
      expect(b.buffer.byteLength).toBe(n);
      // slice() copies (a Buffer's would be a view).
      if (n > 0) {
        b[0] = 7;
        const copy = b.slice(0, 1);
        copy[0] = 9;
        expect(b[0]).toBe(7);
      }
    }
  });
});
