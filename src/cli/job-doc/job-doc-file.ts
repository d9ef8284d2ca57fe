// Job documents in files: YAML (any number of `---`-separated documents) or JSON (one object or
// a list of them; JSON is read as the YAML it is). Parsing reports every syntax error with its
// line; writing produces exactly what parsing reads back.
import { parseAllDocuments, stringify } from 'yaml';
import { UsageError } from '../usage-error.js';
import type { DocValue } from './doc-values.js';
import type { OutputFormat } from './output-format.js';

/** One document of a file, before it is read as a job. */
export interface RawDocument {
  /** Where it is, for messages: "jobs.yaml doc 3" or "jobs.json doc 1 item 4". */
  where: string;
  value: unknown;
}

/** Splits a file into its documents; a list at the top of a document holds one job per item. */
export function parseDocuments(text: string, source: string): RawDocument[] {
  const docs = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [];
  const problems: string[] = [];
  const out: RawDocument[] = [];
  list.forEach((doc, i) => {
    for (const e of doc.errors) {
      const at = e.linePos?.[0];
      const what = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      problems.push(`${source}${at ? ` line ${at.line}, column ${at.col}` : ` doc ${i + 1}`}: ${what}`);
    }
    if (doc.errors.length > 0) return;
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return; // an empty document
    if (Array.isArray(value)) value.forEach((item, k) => out.push({ where: `${source} doc ${i + 1} item ${k + 1}`, value: item }));
    else out.push({ where: `${source} doc ${i + 1}`, value });
  });
  if (problems.length > 0) throw new UsageError(problems.join('; '), problems);
  return out;
}

function yamlDoc(doc: DocValue): string {
  return stringify(doc, { lineWidth: 0 });
}

/** One job document as YAML or JSON. */
export function formatDocument(doc: DocValue, format: OutputFormat): string {
  return format === 'json' ? JSON.stringify(doc, null, 2) + '\n' : yamlDoc(doc);
}

/** Many job documents: a YAML stream of `---`-separated documents, or a JSON list. */
export function formatDocuments(docs: DocValue[], format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(docs, null, 2) + '\n';
  return docs.map((d) => `---\n${yamlDoc(d)}`).join('');
}
