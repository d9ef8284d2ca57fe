import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkOperations, describeResult } from '../../src/raft/linearizability/checker.js';
import { documentModel, type DocInput, type DocOperation, type DocOutput } from '../../src/raft/linearizability/document-model.js';
import { createPrng } from '../../src/raft/sim/prng.js';

interface Job {
  cron: string;
  paused?: boolean;
}
type Op = DocOperation<Job>;

const op = (clientId: number, call: number, ret: number, input: DocInput<Job>, output?: DocOutput<Job>): Op => ({
  clientId,
  call,
  return: ret,
  input,
  ...(output ? { output } : {}),
});
const A: Job = { cron: '* * * * *' };
const B: Job = { cron: '0 * * * *' };
const C: Job = { cron: '0 0 * * *' };
const ok = (version?: number, doc?: Job): DocOutput<Job> => ({ status: 'ok', ...(version !== undefined ? { version } : {}), ...(doc ? { doc } : {}) });
const notFound: DocOutput<Job> = { status: 'not_found' };
const exists: DocOutput<Job> = { status: 'already_exists' };
const mismatch: DocOutput<Job> = { status: 'failed_precondition' };
const create = (doc: Job, idempotencyKey?: string): DocInput<Job> => ({ kind: 'create', id: 'j1', doc, ...(idempotencyKey ? { idempotencyKey } : {}) });
const get: DocInput<Job> = { kind: 'get', id: 'j1' };
const update = (doc: Job | ((j: Job) => Job), expectedVersion?: number): DocInput<Job> => ({ kind: 'update', id: 'j1', doc, ...(expectedVersion ? { expectedVersion } : {}) });
const del = (expectedVersion?: number): DocInput<Job> => ({ kind: 'delete', id: 'j1', ...(expectedVersion ? { expectedVersion } : {}) });

const sequential = documentModel<Job>();
const increasing = documentModel<Job>({ versions: 'increasing' });
const check = (h: Op[], model = sequential) => checkOperations(model, h).result;

describe('document model: the job control plane', () => {
  it('create, read, conditional update and delete in sequence are linearizable', () => {
    const h = [
      op(1, 0, 1, get, notFound),
      op(1, 2, 3, create(A), ok(1)),
      op(1, 4, 5, get, ok(1, A)),
      op(1, 6, 7, update(B, 1), ok(2)),
      op(2, 8, 9, get, ok(2, B)),
      op(2, 10, 11, del(1), mismatch),
      op(2, 12, 13, get, ok(2, B)),
      op(2, 14, 15, del(2), ok()),
      op(1, 16, 17, update(C), notFound),
      op(1, 18, 19, get, notFound),
    ];
    expect(check(h)).toBe('ok');
  });

  it('a stale read of the previous version is caught', () => {
    const h = [op(1, 0, 1, create(A), ok(1)), op(1, 2, 3, update(B, 1), ok(2)), op(2, 4, 5, get, ok(1, A))];
    const r = checkOperations(sequential, h);
    expect(r.result).toBe('illegal');
    expect(describeResult(sequential, r)).toContain('cannot place: client 2: get(j1) -> ok v1');
  });

  it('a lost update: two conditional updates from the same version cannot both succeed', () => {
    const base = op(1, 0, 1, create(A), ok(1));
    expect(check([base, op(1, 2, 9, update(B, 1), ok(2)), op(2, 2, 9, update(C, 1), ok(2))])).toBe('illegal');
    expect(check([base, op(1, 2, 9, update(B, 1), ok(2)), op(2, 2, 9, update(C, 1), mismatch), op(3, 10, 11, get, ok(2, B))])).toBe('ok');
  });

  it('two creates of one id cannot both succeed, unless the second is an idempotent retry', () => {
    expect(check([op(1, 0, 5, create(A), ok(1)), op(2, 0, 5, create(B), ok(1))])).toBe('illegal');
    expect(check([op(1, 0, 5, create(A), ok(1)), op(2, 0, 5, create(B), exists)])).toBe('ok');
    // The first attempt timed out; the retry with the same key returns the job it created.
    expect(check([op(1, 0, Infinity, create(A, 'k1')), op(1, 10, 11, create(A, 'k1'), ok(1)), op(2, 12, 13, get, ok(1, A))])).toBe('ok');
    // A different key is a different request: ALREADY_EXISTS is the only acceptable answer.
    expect(check([op(1, 0, 1, create(A, 'k1'), ok(1)), op(2, 2, 3, create(A, 'k2'), ok(1))])).toBe('illegal');
  });

  it('unknown-outcome writes may or may not have happened, but consistently', () => {
    const created = op(1, 0, 1, create(A), ok(1));
    const lostUpdate = op(1, 2, Infinity, update(B, 1));
    expect(check([created, lostUpdate, op(2, 5, 6, get, ok(1, A)), op(2, 7, 8, get, ok(2, B))])).toBe('ok');
    expect(check([created, lostUpdate, op(2, 5, 6, get, ok(2, B)), op(2, 7, 8, get, ok(1, A))])).toBe('illegal');
    const lostDelete = op(1, 2, Infinity, del());
    expect(check([created, lostDelete, op(2, 5, 6, get, notFound)])).toBe('ok');
    expect(check([created, lostDelete, op(2, 5, 6, get, ok(1, A))])).toBe('ok');
  });

  it('a patch (pause) applies to the document as it is when the write takes effect', () => {
    const pause = (j: Job): Job => ({ ...j, paused: true });
    const h = [op(1, 0, 1, create(A), ok(1)), op(2, 2, 10, update(B), ok(2)), op(3, 2, 10, update(pause), ok()), op(1, 11, 12, get, ok(3, { ...B, paused: true }))];
    expect(check(h)).toBe('ok');
    const wrongOrder = [...h.slice(0, 3), op(1, 11, 12, get, ok(3, B))];
    expect(check(wrongOrder)).toBe('illegal');
  });

  it("'increasing' versions tolerate server-side bumps but never a version going back", () => {
    const h = [op(1, 0, 1, create(A), ok(1)), op(2, 2, 3, get, ok(4, A))];
    expect(check(h, sequential)).toBe('illegal');
    expect(check(h, increasing)).toBe('ok');
    expect(check([...h, op(2, 4, 5, get, ok(3, A))], increasing)).toBe('illegal');
    // An unknown conditional update against the bumped version may have applied or not...
    const lost = op(1, 6, Infinity, update(B, 4));
    expect(check([...h, lost, op(2, 8, 9, get, ok(4, A))], increasing)).toBe('ok');
    expect(check([...h, lost, op(2, 8, 9, get, ok(7, B))], increasing)).toBe('ok');
    // ...but if it applied, the new document has a version above the one it replaced.
    expect(check([...h, lost, op(2, 8, 9, get, ok(4, B))], increasing)).toBe('illegal');
  });

  it('histories of a sequential execution pass; a read with a bumped version is caught', () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 40 }), (seed, clients, n) => {
        const h = sequentialJobHistory(seed, clients, n);
        const r = checkOperations(sequential, h);
        if (r.result !== 'ok') throw new Error(describeResult(sequential, r));
        const reads = h.filter((o) => o.input.kind === 'get' && o.output?.status === 'ok');
        if (reads.length === 0) return;
        const victim = reads[seed % reads.length]!;
        const out = victim.output as { status: 'ok'; version: number; doc: Job };
        const mutated = h.map((o) => (o === victim ? { ...o, output: { ...out, version: out.version + 100 } } : o));
        expect(checkOperations(sequential, mutated).result).toBe('illegal');
      }),
      { numRuns: 100 },
    );
  });
});

/** Jobs j0..j2 driven by `clients` clients; outputs from a real store applied at random points. */
function sequentialJobHistory(seed: number, clients: number, n: number): Op[] {
  const rng = createPrng(seed);
  const free = new Array<number>(clients).fill(0);
  const planned: Array<{ op: Op; lp: number }> = [];
  for (let i = 0; i < n; i++) {
    let c = 0;
    for (let k = 1; k < clients; k++) if (free[k]! < free[c]!) c = k;
    const call = free[c]! + rng.int(0, 3);
    const ret = call + rng.int(1, 15);
    free[c] = ret + 1;
    const id = `j${rng.int(0, 3)}`;
    const doc: Job = { cron: `${i} * * * *` };
    const e = rng.chance(0.5) ? rng.int(1, 4) : undefined;
    const input: DocInput<Job> = rng.pick<DocInput<Job>>([
      { kind: 'create', id, doc },
      { kind: 'get', id },
      { kind: 'get', id },
      { kind: 'update', id, doc, ...(e ? { expectedVersion: e } : {}) },
      { kind: 'delete', id, ...(e ? { expectedVersion: e } : {}) },
    ]);
    planned.push({ op: { clientId: c, call, return: ret, input }, lp: call + rng.next() * (ret - call) });
  }
  const store = new Map<string, { doc: Job; version: number }>();
  for (const p of [...planned].sort((a, b) => a.lp - b.lp)) {
    const i = p.op.input;
    const cur = store.get(i.id);
    if (i.kind === 'get') p.op.output = cur ? { status: 'ok', version: cur.version, doc: cur.doc } : { status: 'not_found' };
    else if (i.kind === 'create') {
      if (cur) p.op.output = { status: 'already_exists' };
      else {
        store.set(i.id, { doc: i.doc, version: 1 });
        p.op.output = { status: 'ok', version: 1 };
      }
    } else if (!cur) p.op.output = { status: 'not_found' };
    else if (i.expectedVersion && i.expectedVersion !== cur.version) p.op.output = { status: 'failed_precondition' };
    else if (i.kind === 'delete') {
      store.delete(i.id);
      p.op.output = { status: 'ok' };
    } else {
      store.set(i.id, { doc: i.doc as Job, version: cur.version + 1 });
      p.op.output = { status: 'ok', version: cur.version + 1 };
    }
  }
  return planned.map((p) => p.op);
}
