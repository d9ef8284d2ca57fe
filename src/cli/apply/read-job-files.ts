// Reads the files given to `herald apply -f` into validated job documents, or fails naming every
// bad document and field ("jobs.yaml doc 3 (id nightly): schedule.cron.expression: ...") before
// anything is sent: a bad file changes nothing. Specs are checked with the server's own
// validation (cron syntax, zones, ranges), so a file that passes here is not refused later for
// its content.
import { readFileSync } from 'node:fs';
import { validateJobSpec } from '../../fsm/commands/validation.js';
import { ScheduleCaches } from '../../fsm/schedule/index.js';
import { isHeraldError } from '../../herald-error.js';
import { DocFieldError } from '../job-doc/doc-values.js';
import type { JobDocCodec, JobDocument } from '../job-doc/job-doc-codec.js';
import { parseDocuments } from '../job-doc/job-doc-file.js';
import { UsageError } from '../usage-error.js';

export interface SourcedJob extends JobDocument {
  where: string;
}

/** `-f -` reads stdin. */
export function readSource(path: string, stdin: () => string): { text: string; name: string } {
  if (path === '-') return { text: stdin(), name: '(stdin)' };
  try {
    return { text: readFileSync(path, 'utf8'), name: path };
  } catch (e) {
    throw new UsageError(`-f ${path}: cannot read: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** All jobs of all sources, validated; throws one UsageError listing every problem. */
export function readJobDocuments(sources: ReadonlyArray<{ text: string; name: string }>, codec: JobDocCodec): SourcedJob[] {
  const caches = new ScheduleCaches();
  const problems: string[] = [];
  const jobs: SourcedJob[] = [];
  const firstSeen = new Map<string, string>();
  for (const src of sources) {
    let docs;
    try {
      docs = parseDocuments(src.text, src.name);
    } catch (e) {
      if (e instanceof UsageError) {
        problems.push(...(e.problems.length > 0 ? e.problems : [e.message]));
        continue;
      }
      throw e;
    }
    for (const raw of docs) {
      const id = typeof (raw.value as { id?: unknown } | null)?.id === 'string' ? (raw.value as { id: string }).id : undefined;
      const where = `${raw.where}${id !== undefined ? ` (id ${id})` : ''}`;
      try {
        const doc = codec.docToJob(raw.value);
        try {
          validateJobSpec(doc.spec, caches);
        } catch (e) {
          if (!isHeraldError(e)) throw e;
          const field = typeof e.details.field === 'string' ? e.details.field : undefined;
          const problem = field !== undefined && e.message.startsWith(`${field}: `) ? e.message.slice(field.length + 2) : e.message;
          throw new DocFieldError(field === undefined ? '(spec)' : codec.docPath(field), problem);
        }
        const earlier = firstSeen.get(doc.id);
        if (earlier !== undefined) throw new DocFieldError('id', `job "${doc.id}" is already defined by ${earlier}`);
        firstSeen.set(doc.id, raw.where);
        jobs.push({ ...doc, where });
      } catch (e) {
        if (e instanceof DocFieldError) problems.push(`${where}: ${e.message}`);
        else throw e;
      }
    }
  }
  if (problems.length > 0) {
    throw new UsageError(`${problems.length === 1 ? problems[0] : `${problems.length} problems`}; nothing was changed`, problems);
  }
  return jobs;
}
