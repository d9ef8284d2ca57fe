// `--limit` for list commands: fetch pages until the limit is reached (0 = everything), and say
// whether more were left, so a default listing stays quick on a cluster with millions of jobs.
import type { Page } from '../client/herald-client.js';
import { UsageError } from './usage-error.js';

const MAX_PAGE = 1000;

export function parseLimit(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) throw new UsageError(`--limit: "${text}" is not a whole number >= 0`);
  return n;
}

export async function collectLimited<T>(
  limit: number,
  fetch: (pageToken: string, pageSize: number) => Promise<Page<T>>,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let token = '';
  for (;;) {
    const want = limit === 0 ? MAX_PAGE : Math.min(MAX_PAGE, limit - items.length);
    const page = await fetch(token, want);
    items.push(...page.items);
    token = page.nextPageToken;
    if (token === '') return { items: limit === 0 ? items : items.slice(0, limit), more: limit !== 0 && items.length > limit };
    if (limit !== 0 && items.length >= limit) return { items: items.slice(0, limit), more: true };
  }
}
