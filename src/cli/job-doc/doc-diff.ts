// The per-field difference between two job documents, as `apply --dry-run` shows it: every leaf
// (a scalar, a list, an empty mapping) by its path, added, removed or changed.
import type { DocValue } from './doc-values.js';

export interface FieldChange {
  path: string;
  /** Absent: the field is added. */
  before?: DocValue;
  /** Absent: the field is removed (back to its default). */
  after?: DocValue;
}

function keyPath(path: string, key: string): string {
  const seg = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : `[${JSON.stringify(key)}]`;
  if (path === '') return seg;
  return seg.startsWith('[') ? path + seg : `${path}.${seg}`;
}

function isObject(v: DocValue | undefined): v is { [key: string]: DocValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function flatten(value: DocValue, path: string, out: Map<string, DocValue>): void {
  if (isObject(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) flatten(v, keyPath(path, k), out);
  } else {
    out.set(path, value);
  }
}

/** The changes that turn `before` into `after` (both documents without id and version). */
export function diffDocs(before: { [key: string]: DocValue }, after: { [key: string]: DocValue }): FieldChange[] {
  const a = new Map<string, DocValue>();
  const b = new Map<string, DocValue>();
  flatten(before, '', a);
  flatten(after, '', b);
  a.delete('');
  b.delete('');
  const changes: FieldChange[] = [];
  for (const [path, v] of b) {
    if (!a.has(path)) changes.push({ path, after: v });
    else if (JSON.stringify(a.get(path)) !== JSON.stringify(v)) changes.push({ path, before: a.get(path)!, after: v });
  }
  for (const [path, v] of a) if (!b.has(path)) changes.push({ path, before: v });
  return changes;
}

function show(v: DocValue | undefined): string {
  return JSON.stringify(v);
}

/** "  ~ retry.maxAttempts: 3 → 5", "  + labels.tier: \"1\"", "  - jitter: \"10s\"". */
export function formatChange(c: FieldChange): string {
  if (c.before === undefined) return `+ ${c.path}: ${show(c.after)}`;
  if (c.after === undefined) return `- ${c.path}: ${show(c.before)}`;
  return `~ ${c.path}: ${show(c.before)} → ${show(c.after)}`;
}
