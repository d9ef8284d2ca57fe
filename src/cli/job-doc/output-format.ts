// `-o yaml|json|table` of `job get` and `job ls` (kept apart from the YAML writer, which only
// these formats load).
import { UsageError } from '../usage-error.js';

export type OutputFormat = 'yaml' | 'json';

export function parseOutputFormat(text: string): OutputFormat | 'table' {
  const f = text.toLowerCase();
  if (f === 'yaml' || f === 'yml') return 'yaml';
  if (f === 'json' || f === 'table') return f;
  throw new UsageError(`-o/--output: unknown format "${text}" (use yaml, json or table)`);
}
