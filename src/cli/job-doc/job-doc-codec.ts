// The job document format of `herald apply -f` and `herald job get|ls -o yaml|json`, derived from
// the JobSpec descriptor rather than a field list kept by hand: a document is { id, version?,
// ...the JobSpec fields }. Keys are the proto field names in lowerCamelCase; by the herald.v1
// naming convention (job.proto) an int64 `*_unix_ms` field is an instant written in RFC 3339 and an
// int64 `*_ms` field a duration written "30s", both keyed without the suffix; enums are lower-case
// names without their prefix; a oneof's member sits directly in its parent; zero values are left
// out. Conversion goes through the wire format: the generated JobSpec codec on one side, a
// reflection message built from the descriptor on the other.
import { create, fromBinary, ScalarType, toBinary, type DescField, type DescMessage, type Message } from '@bufbuild/protobuf';
import { protoCamelCase } from '@bufbuild/protobuf/reflect';
import { DstFoldPolicy, JobSpec, type Job } from '../../gen/herald/v1/job.js';
import {
  bytesFromDoc,
  bytesToDoc,
  describeValue,
  DocFieldError,
  durationFromDoc,
  durationToDoc,
  enumFromDoc,
  enumToDoc,
  instantFromDoc,
  instantToDoc,
  isMapping,
  type DocValue,
} from './doc-values.js';

/** One job as read from a document. */
export interface JobDocument {
  id: string;
  /** When given, the job must still be at this version for apply to change it. */
  version: number | undefined;
  spec: JobSpec;
}

/** The keys a document has besides the JobSpec fields. */
export const DOC_ID_KEY = 'id';
export const DOC_VERSION_KEY = 'version';
/**
 * Who created / last changed the job (Job.created_by / updated_by): output only, shown when
 * recorded (auth on). Read back they are ignored, so `job get -o yaml` applies unchanged.
 */
export const DOC_CREATED_BY_KEY = 'createdBy';
export const DOC_UPDATED_BY_KEY = 'updatedBy';

// Fields the server sets and a request does not choose; documents neither show nor accept them.
const SERVER_SET = new Set(['herald.v1.DstPolicy.fold_auto']);

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);
const INT32 = new Set([ScalarType.INT32, ScalarType.SINT32, ScalarType.SFIXED32]);
const UINT32 = new Set([ScalarType.UINT32, ScalarType.FIXED32]);

type Style = 'instant' | 'duration' | 'plain';

interface DocKey {
  key: string;
  field: DescField;
  style: Style;
}

function styleOf(field: DescField): Style {
  if (field.fieldKind !== 'scalar' || !INT64.has(field.scalar)) return 'plain';
  if (field.name.endsWith('_unix_ms')) return 'instant';
  if (field.name.endsWith('_ms')) return 'duration';
  return 'plain';
}

function keyOf(field: DescField, style: Style): string {
  if (style === 'instant') return protoCamelCase(field.name.slice(0, -'_unix_ms'.length));
  if (style === 'duration') return protoCamelCase(field.name.slice(0, -'_ms'.length));
  return protoCamelCase(field.name);
}

type Fields = Record<string, unknown>;

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * A server-side normalization undone, so a document compares equal to what it produced: a fold
 * policy the server resolved from AUTO (fold_auto set) reads as unset, which in a request means
 * AUTO again; AUTO itself is sent as unset too.
 */
export function canonicalSpec(spec: JobSpec): JobSpec {
  const dst = spec.dst;
  if (dst !== undefined && (dst.foldAuto || dst.fold === DstFoldPolicy.DST_FOLD_POLICY_AUTO)) {
    return { ...spec, dst: { ...dst, fold: DstFoldPolicy.DST_FOLD_POLICY_UNSPECIFIED, foldAuto: false } };
  }
  return spec;
}

export class JobDocCodec {
  private readonly keysByType = new Map<string, DocKey[]>();

  constructor(private readonly desc: DescMessage) {
    // Build every message's keys now, so a name clash fails at once rather than on some input.
    const top = this.keys(desc);
    for (const reserved of [DOC_ID_KEY, DOC_VERSION_KEY]) {
      if (top.some((k) => k.key === reserved)) throw new Error(`${desc.typeName} has a field named "${reserved}", which job documents reserve`);
    }
  }

  /** The document keys of a message, in proto order. */
  keys(desc: DescMessage): DocKey[] {
    let keys = this.keysByType.get(desc.typeName);
    if (keys !== undefined) return keys;
    keys = desc.fields
      .filter((f) => !SERVER_SET.has(`${desc.typeName}.${f.name}`))
      .map((field) => {
        const style = styleOf(field);
        return { key: keyOf(field, style), field, style };
      });
    const seen = new Set<string>();
    for (const k of keys) {
      if (seen.has(k.key)) throw new Error(`${desc.typeName}: two fields map to the document key "${k.key}"`);
      seen.add(k.key);
    }
    this.keysByType.set(desc.typeName, keys);
    for (const k of keys) {
      const sub = k.field.fieldKind === 'message' || ((k.field.fieldKind === 'list' || k.field.fieldKind === 'map') && k.field.message) ? k.field.message : undefined;
      if (sub !== undefined) this.keys(sub);
    }
    return keys;
  }

  /** The document path of a proto field path from a server error ("spec.retry.max_backoff_ms" → "retry.maxBackoff"). */
  docPath(protoPath: string): string {
    let desc: DescMessage | undefined = this.desc;
    const out: string[] = [];
    for (const seg of protoPath.replace(/^spec\./, '').split('.')) {
      const m = /^([A-Za-z0-9_]+)(.*)$/.exec(seg);
      const name = m?.[1] ?? seg;
      const k: DocKey | undefined = desc === undefined ? undefined : this.keys(desc).find((x) => x.field.name === name);
      out.push((k?.key ?? name) + (m?.[2] ?? ''));
      desc = k?.field.fieldKind === 'message' ? k.field.message : undefined;
    }
    return out.join('.');
  }

  // ---- JobSpec → document ------------------------------------------------------------------

  /** A job as a document: id, version, who (when recorded), then its spec's fields that are not zero. */
  jobToDoc(job: Job): Record<string, DocValue> {
    const who: Record<string, DocValue> = {};
    if (job.createdBy !== '') who[DOC_CREATED_BY_KEY] = job.createdBy;
    if (job.updatedBy !== '') who[DOC_UPDATED_BY_KEY] = job.updatedBy;
    return { [DOC_ID_KEY]: job.id, [DOC_VERSION_KEY]: job.version, ...who, ...(job.spec ? this.specToDoc(job.spec) : {}) };
  }

  specToDoc(spec: JobSpec): Record<string, DocValue> {
    const msg = fromBinary(this.desc, JobSpec.encode(canonicalSpec(spec)).finish()) as unknown as Fields;
    return this.messageToDoc(this.desc, msg);
  }

  private messageToDoc(desc: DescMessage, msg: Fields): Record<string, DocValue> {
    const out: Record<string, DocValue> = {};
    for (const k of this.keys(desc)) {
      let value: unknown;
      let chosen = false;
      if (k.field.oneof !== undefined) {
        const o = msg[k.field.oneof.localName] as { case: string | undefined; value?: unknown };
        if (o.case !== k.field.localName) continue;
        value = o.value;
        chosen = true;
      } else {
        value = msg[k.field.localName];
      }
      const doc = this.valueToDoc(k, value, chosen);
      if (doc !== undefined) out[k.key] = doc;
    }
    return out;
  }

  /** `chosen`: a oneof member that is set is written even when it holds its zero value. */
  private valueToDoc(k: DocKey, value: unknown, chosen: boolean): DocValue | undefined {
    const f = k.field;
    switch (f.fieldKind) {
      case 'list': {
        const items = value as unknown[];
        if (items.length === 0) return undefined;
        return items.map((v) =>
          f.listKind === 'message' ? this.messageToDoc(f.message, v as Fields) : f.listKind === 'enum' ? enumToDoc(f.enum, v as number) : this.scalarToDoc(f.scalar, 'plain', v),
        );
      }
      case 'map': {
        const entries = Object.entries(value as Record<string, unknown>);
        if (entries.length === 0) return undefined;
        const out: Record<string, DocValue> = {};
        for (const [key, v] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
          out[key] = f.mapKind === 'message' ? this.messageToDoc(f.message, v as Fields) : f.mapKind === 'enum' ? enumToDoc(f.enum, v as number) : this.scalarToDoc(f.scalar, 'plain', v);
        }
        return out;
      }
      case 'message': {
        if (value === undefined) return chosen ? {} : undefined;
        const doc = this.messageToDoc(f.message, value as Fields);
        return Object.keys(doc).length === 0 && !chosen ? undefined : doc;
      }
      case 'enum':
        return value === 0 && !chosen ? undefined : enumToDoc(f.enum, value as number);
      case 'scalar':
        if (!chosen && isZero(value)) return undefined;
        return this.scalarToDoc(f.scalar, k.style, value);
    }
  }

  private scalarToDoc(scalar: ScalarType, style: Style, value: unknown): DocValue {
    if (style === 'instant') return instantToDoc(Number(value));
    if (style === 'duration') return durationToDoc(Number(value));
    if (scalar === ScalarType.BYTES) return bytesToDoc(value as Uint8Array);
    if (typeof value === 'bigint') return Number(value);
    return value as DocValue;
  }

  // ---- document → JobSpec ------------------------------------------------------------------

  /** Reads one document; throws DocFieldError naming the first bad field. */
  docToJob(value: unknown): JobDocument {
    if (!isMapping(value)) throw new DocFieldError('(document)', `expected a mapping of job fields, got ${describeValue(value)}`);
    // The output-only keys are dropped whatever they hold: the server records who, not the document.
    const { [DOC_ID_KEY]: id, [DOC_VERSION_KEY]: version, [DOC_CREATED_BY_KEY]: _createdBy, [DOC_UPDATED_BY_KEY]: _updatedBy, ...specFields } = value;
    if (typeof id !== 'string' || id === '') throw new DocFieldError(DOC_ID_KEY, `required: the job id (a string), got ${id === undefined ? 'nothing' : describeValue(id)}`);
    if (version !== undefined && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)) {
      throw new DocFieldError(DOC_VERSION_KEY, `expected a whole number >= 1 (the version the job must still be at), got ${describeValue(version)}`);
    }
    return { id, version, spec: this.docToSpec(specFields) };
  }

  docToSpec(doc: Record<string, unknown>): JobSpec {
    const init = this.messageFromDoc(this.desc, doc, '');
    const msg = create(this.desc, init as never) as Message;
    return canonicalSpec(JobSpec.decode(toBinary(this.desc, msg)));
  }

  private messageFromDoc(desc: DescMessage, value: unknown, path: string): Fields {
    if (!isMapping(value)) throw new DocFieldError(path || '(document)', `expected a mapping, got ${describeValue(value)}`);
    const keys = this.keys(desc);
    const out: Fields = {};
    const oneofSet = new Map<string, string>();
    for (const [key, v] of Object.entries(value)) {
      const k = keys.find((x) => x.key === key);
      const here = join(path, key);
      if (k === undefined) {
        throw new DocFieldError(here, `unknown field (${path === '' ? 'a job has' : `${path} has`}: ${[...(path === '' ? [DOC_ID_KEY, DOC_VERSION_KEY] : []), ...keys.map((x) => x.key)].join(', ')})`);
      }
      if (v === null || v === undefined) continue; // an explicit null is the default, like leaving the key out
      const converted = this.valueFromDoc(k, v, here);
      const oneof = k.field.oneof;
      if (oneof !== undefined) {
        const other = oneofSet.get(oneof.localName);
        if (other !== undefined) {
          throw new DocFieldError(join(path, key), `cannot be combined with "${other}" (give one of: ${oneof.fields.map((f) => this.keys(desc).find((x) => x.field === f)!.key).join(', ')})`);
        }
        oneofSet.set(oneof.localName, key);
        out[oneof.localName] = { case: k.field.localName, value: converted };
      } else {
        out[k.field.localName] = converted;
      }
    }
    return out;
  }

  private valueFromDoc(k: DocKey, v: unknown, path: string): unknown {
    const f = k.field;
    switch (f.fieldKind) {
      case 'list':
        if (!Array.isArray(v)) throw new DocFieldError(path, `expected a list, got ${describeValue(v)}`);
        return v.map((item, i) => {
          const p = `${path}[${i}]`;
          return f.listKind === 'message' ? this.messageFromDoc(f.message, item, p) : f.listKind === 'enum' ? enumFromDoc(f.enum, item, p) : scalarFromDoc(f.scalar, 'plain', item, p);
        });
      case 'map': {
        if (!isMapping(v)) throw new DocFieldError(path, `expected a mapping, got ${describeValue(v)}`);
        const out: Record<string, unknown> = {};
        for (const [key, item] of Object.entries(v)) {
          const p = `${path}.${key}`;
          out[key] = f.mapKind === 'message' ? this.messageFromDoc(f.message, item, p) : f.mapKind === 'enum' ? enumFromDoc(f.enum, item, p) : scalarFromDoc(f.scalar, 'plain', item, p);
        }
        return out;
      }
      case 'message':
        return this.messageFromDoc(f.message, v, path);
      case 'enum':
        return enumFromDoc(f.enum, v, path);
      case 'scalar':
        return scalarFromDoc(f.scalar, k.style, v, path);
    }
  }
}

function isZero(v: unknown): boolean {
  if (v instanceof Uint8Array) return v.length === 0;
  return v === 0 || v === 0n || v === '' || v === false || v === undefined;
}

function scalarFromDoc(scalar: ScalarType, style: Style, v: unknown, path: string): unknown {
  if (style === 'instant') return BigInt(instantFromDoc(v, path));
  if (style === 'duration') return BigInt(durationFromDoc(v, path));
  if (scalar === ScalarType.BYTES) return bytesFromDoc(v, path);
  if (scalar === ScalarType.STRING) {
    if (typeof v !== 'string') throw new DocFieldError(path, `expected text, got ${describeValue(v)}${typeof v === 'number' || typeof v === 'boolean' ? ` (quote it: "${String(v)}")` : ''}`);
    return v;
  }
  if (scalar === ScalarType.BOOL) {
    if (typeof v !== 'boolean') throw new DocFieldError(path, `expected true or false, got ${describeValue(v)}`);
    return v;
  }
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new DocFieldError(path, `expected a number, got ${describeValue(v)}`);
  if (scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT) return v;
  if (!Number.isSafeInteger(v)) throw new DocFieldError(path, `expected a whole number, got ${v}`);
  if (INT32.has(scalar) && (v < -(2 ** 31) || v >= 2 ** 31)) throw new DocFieldError(path, `${v} is out of range`);
  if (UINT32.has(scalar) && (v < 0 || v >= 2 ** 32)) throw new DocFieldError(path, `${v} is out of range`);
  if (INT64.has(scalar)) {
    if (v < 0 && (scalar === ScalarType.UINT64 || scalar === ScalarType.FIXED64)) throw new DocFieldError(path, `${v} is out of range`);
    return BigInt(v);
  }
  return v;
}
