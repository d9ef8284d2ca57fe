// The Jobs page fills a filtered page from the server's bounded scans (dashboard/src/fill-page.ts).
import { describe, expect, it } from 'vitest';
import { fillPage } from '../../dashboard/src/fill-page.js';

/** A fake ListJobs over ids 0..n-1 keeping those `match` accepts, scanning `budget` ids a call. */
function fakeList(n: number, match: (i: number) => boolean, budget: number) {
  const calls: Array<{ size: number; token: string }> = [];
  const list = async (size: number, token: string) => {
    calls.push({ size, token });
    const jobs: number[] = [];
    let i = token ? Number(token) + 1 : 0;
    let scanned = 0;
    for (; i < n; i++) {
      scanned++;
      if (match(i)) jobs.push(i);
      if (jobs.length === size || scanned >= budget) return { jobs, nextPageToken: String(i) };
    }
    return { jobs, nextPageToken: '' };
  };
  return { list, calls };
}

describe('fillPage', () => {
  it('goes on past short pages until the page is full, asking only for what it lacks', async () => {
    const f = fakeList(100_000, (i) => i % 1000 === 7, 10_000);
    const p = await fillPage(f.list, 50, '');
    expect(p.jobs).toHaveLength(50);
    expect(p.jobs[0]).toBe(7);
    expect(p.jobs[49]).toBe(49_007);
    expect(f.calls.map((c) => c.size)).toEqual([50, 40, 30, 20, 10]);
    // The token continues right after the last row shown.
    const next = await fillPage(f.list, 50, p.nextPageToken);
    expect(next.jobs[0]).toBe(50_007);
    expect(next.jobs).toHaveLength(50);
    expect(await fillPage(f.list, 50, next.nextPageToken)).toMatchObject({ jobs: [], nextPageToken: '' });
  });

  it('stops at the end of the list, and at its bounds with a token to go on', async () => {
    const none = fakeList(25_000, () => false, 10_000);
    expect(await fillPage(none.list, 50, '')).toEqual({ jobs: [], nextPageToken: '', calls: 3 });
    const big = fakeList(1_000_000, () => false, 10_000);
    const p = await fillPage(big.list, 50, '', { maxCalls: 4, maxMs: 60_000 });
    expect(p).toMatchObject({ jobs: [], calls: 4, nextPageToken: '39999' });
    let t = 0;
    const slow = await fillPage(big.list, 50, '', { maxCalls: 100, maxMs: 1000 }, () => (t += 400));
    // 400 ms a call: the third call ends 1,200 ms in, past the bound.
    expect(slow.calls).toBe(3);
  });
});
