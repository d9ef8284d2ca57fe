// A page of a filtered job list, filled by the browser from the server's bounded scans. ListJobs
// examines at most LIST_JOBS_SCAN_BUDGET (10,000) job records a call and then answers with what
// it found and a token to go on, so a filter matching 1 job in 1,000 answered ~10 jobs a call at
// 100,000 jobs (bench/README.md, dashboard-scale): the page showed a short list, or "no match in
// this stretch", and Next had to be pressed ten times to walk the list. The page now goes on by
// itself, asking each time only for the rows it still lacks (so the token it ends with is exact:
// Next continues right after the last row shown), until the page is full, the list ends, or a
// bound on calls and time is reached (then the page says the server searches on with Next).
// The browser still holds one page of rows at most. No DOM here: it is tested in Node.

export interface JobsPage<J> {
  jobs: J[];
  nextPageToken: string;
}

export interface FillBounds {
  /** Calls at most per page (each scans at most 10,000 jobs on the server). */
  maxCalls: number;
  /** Stop asking once this much time went by (ms), with what was found so far. */
  maxMs: number;
}

export const FILL_BOUNDS: FillBounds = { maxCalls: 20, maxMs: 8000 };

export async function fillPage<J>(
  list: (pageSize: number, pageToken: string) => Promise<JobsPage<J>>,
  pageSize: number,
  pageToken: string,
  bounds: FillBounds = FILL_BOUNDS,
  now: () => number = () => Date.now(),
): Promise<JobsPage<J> & { calls: number }> {
  const started = now();
  const jobs: J[] = [];
  let token = pageToken;
  let calls = 0;
  for (;;) {
    const r = await list(pageSize - jobs.length, token);
    calls++;
    jobs.push(...r.jobs.slice(0, pageSize - jobs.length));
    token = r.nextPageToken;
    if (!token || jobs.length >= pageSize || calls >= bounds.maxCalls || now() - started >= bounds.maxMs) return { jobs, nextPageToken: token, calls };
  }
}
