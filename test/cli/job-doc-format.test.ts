// The job document format of `herald apply` / `job get -o yaml`, in process: derived from the
// JobSpec descriptor, lossless both ways, and precise about bad input.
import { mkdtempSync, readFileSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DstFoldPolicy, DstGapPolicy, MisfirePolicy, OverlapPolicy, type JobSpec } from '../../src/gen/herald/v1/job.js';
import { loadJobSpecDescriptor } from '../../src/cli/job-doc/job-spec-descriptor.js';
import { JobDocCodec } from '../../src/cli/job-doc/job-doc-codec.js';
import { formatDocument, formatDocuments, parseDocuments } from '../../src/cli/job-doc/job-doc-file.js';
import { diffDocs, formatChange } from '../../src/cli/job-doc/doc-diff.js';
import { readJobDocuments } from '../../src/cli/apply/read-job-files.js';
import { protoRoot } from '../../src/server/grpc/proto-files.js';
import { UsageError } from '../../src/cli/usage-error.js';

const codec = new JobDocCodec(loadJobSpecDescriptor());

/** A spec with every field set to something other than its default. */
function fullSpec(): JobSpec {
  return {
    taskType: 'report',
    payload: Buffer.from('{"format":"pdf","pages":[1,2]}'),
    schedule: { kind: { $case: 'cron', cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } } },
    startUnixMs: Date.UTC(2030, 0, 1),
    endUnixMs: Date.UTC(2031, 0, 1, 12, 30, 0, 250),
    retry: { maxAttempts: 5, initialBackoffMs: 30_000, maxBackoffMs: 600_000, backoffMultiplier: 1.5, nonRetryableErrorTypes: ['BadInput', 'Forbidden'] },
    executionTimeoutMs: 5_400_000,
    leaseDurationMs: 45_000,
    misfirePolicy: MisfirePolicy.MISFIRE_POLICY_RUN_ALL,
    misfireMaxRuns: 20,
    startingDeadlineMs: 120_000,
    overlapPolicy: OverlapPolicy.OVERLAP_POLICY_BUFFER_ONE,
    jitterMs: 10_000,
    dst: { gap: DstGapPolicy.DST_GAP_POLICY_SKIP, fold: DstFoldPolicy.DST_FOLD_POLICY_BOTH, foldAuto: false },
    retention: { maxRuns: 50, maxAgeMs: 3 * 86_400_000 },
    labels: { team: 'finance', 'app.kubernetes.io/name': 'reports' },
    priority: -7,
    maxPendingRuns: 500,
    alerts: { onFailure: '', onDead: 'alerts', onMissed: 'pager', onWatchdog: '' },
    pauseAfterDead: 3,
    maxConcurrent: 4,
  };
}

describe('job documents', () => {
  it('write every field readably: durations, RFC 3339 instants, lower-case enums, structured JSON payloads', () => {
    const doc = codec.jobToDoc({ id: 'nightly', version: 4, spec: fullSpec() } as never);
    expect(doc).toEqual({
      id: 'nightly',
      version: 4,
      taskType: 'report',
      payload: { format: 'pdf', pages: [1, 2] },
      schedule: { cron: { expression: '0 2 * * *', timeZone: 'Europe/Berlin' } },
      start: '2030-01-01T00:00:00Z',
      end: '2031-01-01T12:30:00.250Z',
      retry: { maxAttempts: 5, initialBackoff: '30s', maxBackoff: '10m', backoffMultiplier: 1.5, nonRetryableErrorTypes: ['BadInput', 'Forbidden'] },
      executionTimeout: '1h30m',
      leaseDuration: '45s',
      misfirePolicy: 'run-all',
      misfireMaxRuns: 20,
      startingDeadline: '2m',
      overlapPolicy: 'buffer-one',
      jitter: '10s',
      dst: { gap: 'skip', fold: 'both' },
      retention: { maxRuns: 50, maxAge: '3d' },
      labels: { 'app.kubernetes.io/name': 'reports', team: 'finance' },
      priority: -7,
      maxPendingRuns: 500,
      alerts: { onDead: 'alerts', onMissed: 'pager' },
      pauseAfterDead: 3,
      maxConcurrent: 4,
    });
  });

  it('read back exactly the spec they were written from, through YAML and JSON text', () => {
    const job = { id: 'nightly', version: 4, spec: fullSpec() };
    for (const format of ['yaml', 'json'] as const) {
      const text = formatDocument(codec.jobToDoc(job as never), format);
      const [raw] = parseDocuments(text, `x.${format}`);
      const back = codec.docToJob(raw!.value);
      expect(back.id).toBe('nightly');
      expect(back.version).toBe(4);
      expect({ ...back.spec, payload: Buffer.from(back.spec.payload) }).toEqual(job.spec);
    }
  });

  it('show who created and last changed the job (output only): read back, those keys are ignored', () => {
    const job = { id: 'nightly', version: 4, spec: fullSpec(), createdBy: 'alice', updatedBy: 'deploy-bot' };
    for (const format of ['yaml', 'json'] as const) {
      const text = formatDocument(codec.jobToDoc(job as never), format);
      expect(text).toContain('alice');
      const [raw] = parseDocuments(text, `x.${format}`);
      expect(raw!.value).toMatchObject({ createdBy: 'alice', updatedBy: 'deploy-bot' });
      const back = codec.docToJob(raw!.value);
      expect({ ...back.spec, payload: Buffer.from(back.spec.payload) }).toEqual(job.spec);
    }
    // Nobody recorded (auth off): the document is as before, without the keys.
    expect(Object.keys(codec.jobToDoc({ ...job, createdBy: '', updatedBy: '' } as never))).not.toContain('createdBy');
  });

  it('leave defaults out, and keep every payload byte (text, non-canonical JSON, binary)', () => {
    const base: JobSpec = { ...codec.docToSpec({ taskType: 't', schedule: { every: { interval: '5m' } } }) };
    expect(codec.specToDoc(base)).toEqual({ taskType: 't', schedule: { every: { interval: '5m' } } });
    for (const payload of [Buffer.from('hello: world'), Buffer.from('{"a": 1}'), Buffer.from([0xff, 0x00, 0x80]), Buffer.from('[1,2]')]) {
      const doc = codec.specToDoc({ ...base, payload });
      const text = formatDocument(doc, 'yaml');
      const back = codec.docToSpec(parseDocuments(text, 'p.yaml')[0]!.value as Record<string, unknown>);
      expect(Buffer.from(back.payload).equals(payload)).toBe(true);
    }
    expect(codec.specToDoc({ ...base, payload: Buffer.from([0xff]) }).payload).toEqual({ $base64: '/w==' });
    expect(codec.specToDoc({ ...base, payload: Buffer.from('{"a": 1}') }).payload).toBe('{"a": 1}');
  });

  it('read a fold the server resolved from AUTO as unset, so the file that asked for AUTO is unchanged', () => {
    const asked = codec.docToSpec({ taskType: 't', schedule: { cron: { expression: '0 2 * * *' } }, dst: { fold: 'auto' } });
    expect(asked.dst?.fold).toBe(DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED);
    const stored: JobSpec = { ...asked, dst: { gap: 0, fold: DstFoldPolicy.DST_FOLD_POLICY_FIRST, foldAuto: true } };
    expect(diffDocs(codec.specToDoc(stored), codec.specToDoc(asked))).toEqual([]);
    expect(() => codec.docToSpec({ taskType: 't', schedule: { cron: { expression: '0 2 * * *' } }, dst: { foldAuto: true } })).toThrow(/dst.foldAuto: unknown field/);
  });

  it('follow the descriptor: a field added to JobSpec is a document key without a code change', () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-jobdoc-'));
    try {
      mkdirSync(join(dir, 'herald', 'v1'), { recursive: true });
      const proto = readFileSync(join(protoRoot(), 'herald', 'v1', 'job.proto'), 'utf8').replace(
        /message JobSpec \{/,
        'message JobSpec {\n  int32 max_parallel = 900;\n  int64 alert_grace_ms = 901;\n  int64 quiet_until_unix_ms = 902;\n  OverlapPolicy alert_overlap = 903;\n',
      );
      writeFileSync(join(dir, 'herald', 'v1', 'job.proto'), proto);
      const desc = loadJobSpecDescriptor(dir);
      const keys = new JobDocCodec(desc).keys(desc).map((k) => k.key);
      expect(keys).toEqual(expect.arrayContaining(['maxParallel', 'maxConcurrent', 'alertGrace', 'quietUntil', 'alertOverlap', 'taskType', 'maxPendingRuns']));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bad documents', () => {
  const bad = (doc: Record<string, unknown>) => () => codec.docToJob({ id: 'j', taskType: 't', schedule: { every: { interval: '5s' } }, ...doc });
  it('name the field and say what is wrong', () => {
    expect(bad({ priorty: 3 })).toThrow(/^priorty: unknown field \(a job has: id, version, taskType/);
    expect(bad({ schedule: { every: { interval: '5s' }, cron: { expression: '* * * * *' } } })).toThrow(/^schedule.cron: cannot be combined with "every" \(give one of: at, cron, every\)/);
    expect(bad({ overlapPolicy: 'sometimes' })).toThrow(/^overlapPolicy: unknown value "sometimes" \(use one of: allow, forbid, buffer-one, replace\)/);
    expect(bad({ jitter: '5 minutes' })).toThrow(/^jitter: invalid duration/);
    expect(bad({ start: '2030-01-01T00:00:00' })).toThrow(/^start: expected an RFC 3339 instant with a zone/);
    expect(bad({ labels: { tier: 1 } })).toThrow(/^labels.tier: expected text, got number 1 \(quote it: "1"\)/);
    expect(bad({ retry: { maxAttempts: 2.5 } })).toThrow(/^retry.maxAttempts: expected a whole number/);
    expect(bad({ retry: { nonRetryableErrorTypes: 'X' } })).toThrow(/^retry.nonRetryableErrorTypes: expected a list/);
    expect(bad({ version: 0 })).toThrow(/^version: expected a whole number >= 1/);
    expect(() => codec.docToJob({ taskType: 't' })).toThrow(/^id: required/);
    expect(() => codec.docToJob(['x'])).toThrow(/expected a mapping of job fields/);
  });

  it('in a file: every problem, with the document index, the job id and the field; server-side checks included', () => {
    const text = [
      'id: a\ntaskType: t\nschedule: {every: {interval: 5m}}',
      'id: nightly\ntaskType: t\nschedule: {cron: {expression: "0 25 * * *"}}',
      'id: c\ntaskType: t\nschedule: {every: {interval: 5m}}\nretry: {maxBackoff: 1s, initialBackoff: 1m}',
      'id: a\ntaskType: t\nschedule: {every: {interval: 5m}}',
      'id: z\ntaskType: t\nschedule: {cron: {expression: "0 2 * * *", timeZone: Mars/Olympus}}',
    ].join('\n---\n');
    let err: unknown;
    try {
      readJobDocuments([{ text, name: 'jobs.yaml' }], codec);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const problems = (err as UsageError).problems;
    expect(problems).toHaveLength(4);
    expect(problems[0]).toMatch(/^jobs.yaml doc 2 \(id nightly\): schedule.cron.expression: /);
    expect(problems[1]).toMatch(/^jobs.yaml doc 3 \(id c\): retry.maxBackoff: must not be below initial_backoff_ms/);
    expect(problems[2]).toBe('jobs.yaml doc 4 (id a): id: job "a" is already defined by jobs.yaml doc 1');
    expect(problems[3]).toMatch(/^jobs.yaml doc 5 \(id z\): schedule.cron.timeZone: /);
    expect((err as Error).message).toBe('4 problems; nothing was changed');
  });

  it('YAML syntax errors carry their line', () => {
    expect(() => parseDocuments('id: a\ntaskType: [t\n', 'jobs.yaml')).toThrow(/^jobs.yaml line \d+, column \d+: /);
    expect(() => parseDocuments('id: a\nid: b\n', 'jobs.yaml')).toThrow(/jobs.yaml line 2, column 1: .*unique/i);
  });

  it('JSON lists and YAML streams hold many jobs; empty documents are skipped', () => {
    expect(parseDocuments('[{"id":"a"},{"id":"b"}]', 'j.json').map((d) => d.where)).toEqual(['j.json doc 1 item 1', 'j.json doc 1 item 2']);
    expect(parseDocuments('---\nid: a\n---\n---\nid: b\n', 'j.yaml').map((d) => d.where)).toEqual(['j.yaml doc 1', 'j.yaml doc 3']);
    const stream = formatDocuments([{ id: 'a' }, { id: 'b' }], 'yaml');
    expect(parseDocuments(stream, 's.yaml').map((d) => d.value)).toEqual([{ id: 'a' }, { id: 'b' }]);
  });
});

describe('field diff', () => {
  it('lists added, changed and removed leaves by path', () => {
    const changes = diffDocs(
      { schedule: { every: { interval: '5m' } }, jitter: '10s', labels: { team: 'a' } },
      { schedule: { every: { interval: '10m' } }, labels: { team: 'a', 'x.y': '1' } },
    );
    expect(changes.map(formatChange)).toEqual(['~ schedule.every.interval: "5m" → "10m"', '+ labels["x.y"]: "1"', '- jitter: "10s"']);
  });
});

