// A versioned document store model: the job control plane's create / get / update / delete with
// optimistic concurrency (expected version) and idempotent creates, partitioned by document id.
// The chaos suite maps a job to a canonical document (say, JSON of the fields clients control)
// and records each RPC as one operation.
//
// Two version disciplines, because the server decides what bumps a version:
// - 'sequential': create gives 1, every client write adds 1 (nothing else changes versions);
//   a stale read shows as a version mismatch as well as a content mismatch.
// - 'increasing': versions only have to grow (the server may bump them on its own, e.g. when
//   the scheduler touches a job). The model then knows a lower bound per document, and
//   unknown-outcome conditional writes branch (applied or not), hence the powerset lifting.

import type { Model, Operation } from './model.js';
import { partitionBy } from './model.js';
import { powersetModel, type NondeterministicModel, type StateSet } from './nondeterministic-model.js';

export type DocInput<D> =
  /** With an idempotency key, a create that finds the document created under the same key succeeds. */
  | { kind: 'create'; id: string; doc: D; idempotencyKey?: string }
  | { kind: 'get'; id: string }
  /** `doc` replaces the document, or (a function) derives it from the current one: pause/resume. */
  | { kind: 'update'; id: string; doc: D | ((current: D) => D); expectedVersion?: number }
  | { kind: 'delete'; id: string; expectedVersion?: number };

export type DocOutput<D> =
  /** create/update: the version written (doc optional); get: the document and its version. */
  | { status: 'ok'; version?: number; doc?: D }
  | { status: 'not_found' }
  | { status: 'already_exists' }
  | { status: 'failed_precondition' };

export interface DocRecord<D> {
  doc: D;
  /** 'sequential': the exact version. 'increasing': a lower bound on it. */
  version: number;
  idempotencyKey?: string;
}

/** One document: its record, or null when absent. */
export type DocState<D> = DocRecord<D> | null;

export type DocOperation<D> = Operation<DocInput<D>, DocOutput<D>>;

export interface DocumentModelOptions<D> {
  versions?: 'sequential' | 'increasing';
  /** Canonical string of a document; equal documents must give equal strings. Default JSON.stringify. */
  docKey?: (doc: D) => string;
}

export function documentModel<D>(opts: DocumentModelOptions<D> = {}): Model<StateSet<DocState<D>>, DocInput<D>, DocOutput<D>> {
  return powersetModel(nondeterministicDocumentModel(opts));
}

export function nondeterministicDocumentModel<D>(
  opts: DocumentModelOptions<D> = {},
): NondeterministicModel<DocState<D>, DocInput<D>, DocOutput<D>> {
  const sequential = (opts.versions ?? 'sequential') === 'sequential';
  const rawDocKey = opts.docKey ?? ((d: D) => JSON.stringify(d));
  // Documents and records are immutable inputs and states: canonicalise each object once.
  const docKeys = new WeakMap<object, string>();
  const docKey = (d: D): string => {
    if (typeof d !== 'object' || d === null) return rawDocKey(d);
    let k = docKeys.get(d);
    if (k === undefined) docKeys.set(d, (k = rawDocKey(d)));
    return k;
  };
  const recordKeys = new WeakMap<DocRecord<D>, string>();
  const sameDoc = (a: D, b: D): boolean => a === b || docKey(a) === docKey(b);

  /** May the document's current version be `v`? */
  const mayBe = (r: DocRecord<D>, v: number): boolean => (sequential ? v === r.version : v >= r.version);
  /** Is the current version certainly not `v`? */
  const certainlyNot = (r: DocRecord<D>, v: number): boolean => (sequential ? v !== r.version : v < r.version);
  const written = (r: DocRecord<D> | null, doc: D, version: number): DocRecord<D> => {
    const out: DocRecord<D> = { doc, version };
    if (r?.idempotencyKey !== undefined) out.idempotencyKey = r.idempotencyKey;
    return out;
  };
  /** A reported version after a write that replaced version `before`. */
  const validNewVersion = (before: number, v: number | undefined): boolean =>
    v === undefined || (sequential ? v === before + 1 : v > before);

  return {
    init: () => null,

    step(s, input, out) {
      switch (input.kind) {
        case 'get': {
          if (out === undefined) return [s];
          if (out.status === 'not_found') return s === null ? [s] : [];
          if (out.status !== 'ok' || s === null || out.doc === undefined || !sameDoc(out.doc, s.doc)) return [];
          if (out.version === undefined) return [s];
          return mayBe(s, out.version) ? [{ ...s, version: out.version }] : [];
        }

        case 'create': {
          const replay = s !== null && input.idempotencyKey !== undefined && s.idempotencyKey === input.idempotencyKey;
          const created = (version: number): DocRecord<D> => {
            const r: DocRecord<D> = { doc: input.doc, version };
            if (input.idempotencyKey !== undefined) r.idempotencyKey = input.idempotencyKey;
            return r;
          };
          if (out === undefined) return s === null ? [created(1)] : [s];
          if (out.status === 'already_exists') return s !== null && !replay ? [s] : [];
          if (out.status !== 'ok') return [];
          if (replay) {
            // The retry answers with the document as it is now.
            if (out.version === undefined) return [s];
            return mayBe(s, out.version) ? [{ ...s, version: out.version }] : [];
          }
          if (s !== null) return [];
          if (out.version !== undefined && (sequential ? out.version !== 1 : out.version < 1)) return [];
          return [created(out.version ?? 1)];
        }

        case 'update':
        case 'delete': {
          const e = input.expectedVersion || undefined; // 0 means unconditional, as in the proto
          const apply = (r: DocRecord<D>, before: number, v: number | undefined): DocState<D> => {
            if (input.kind === 'delete') return null;
            const doc = typeof input.doc === 'function' ? (input.doc as (c: D) => D)(r.doc) : input.doc;
            return written(r, doc, v ?? before + 1);
          };
          if (out === undefined) {
            if (s === null) return [s];
            if (e === undefined) return [apply(s, s.version, undefined)];
            if (certainlyNot(s, e)) return [s];
            // 'increasing': the current version may or may not be e, so it may or may not apply.
            return sequential ? [apply(s, e, undefined)] : [s, apply(s, e, undefined)];
          }
          switch (out.status) {
            case 'not_found':
              return s === null ? [s] : [];
            case 'failed_precondition':
              return s !== null && e !== undefined && (sequential ? e !== s.version : true) ? [s] : [];
            case 'ok': {
              if (s === null) return [];
              if (e !== undefined && !mayBe(s, e)) return [];
              const before = e ?? s.version;
              if (input.kind === 'update' && !validNewVersion(before, out.version)) return [];
              return [apply(s, before, out.version)];
            }
            default:
              return [];
          }
        }
      }
    },

    key(s) {
      if (s === null) return '-';
      let k = recordKeys.get(s);
      if (k === undefined) recordKeys.set(s, (k = `${s.version}|${s.idempotencyKey ?? ''}|${docKey(s.doc)}`));
      return k;
    },
    partition: (h) => partitionBy(h, (i) => i.id),
    readOnly: (i) => i.kind === 'get',
    describeOperation(input, out) {
      const o = out === undefined ? '?' : out.status === 'ok' ? `ok${out.version !== undefined ? ` v${out.version}` : ''}${out.doc !== undefined ? ` ${docKey(out.doc)}` : ''}` : out.status;
      const cond = 'expectedVersion' in input && input.expectedVersion ? ` if v${input.expectedVersion}` : '';
      const doc = 'doc' in input ? (typeof input.doc === 'function' ? ' <patch>' : ` ${docKey(input.doc)}`) : '';
      return `${input.kind}(${input.id}${doc}${cond}) -> ${o}`;
    },
    describeState: (s) => (s === null ? 'absent' : `v${sequential ? '' : '>='}${s.version} ${docKey(s.doc)}`),
  };
}
