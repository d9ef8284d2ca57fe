// The jobs a WatchRuns labels filter starts from: every job carrying the labels, read page by
// page from the node's store (after the stream's read barrier).
import type { Job } from '../../gen/herald/v1/job.js';

export interface JobLister {
  listJobs(q: { pageSize?: number; pageToken?: string; labelSelector?: Readonly<Record<string, string>> }): Promise<{ items: Job[]; nextPageToken: string }>;
}

export async function jobsWithLabels(fsm: JobLister, labels: Readonly<Record<string, string>>): Promise<string[]> {
  const ids: string[] = [];
  let pageToken = '';
  do {
    const page = await fsm.listJobs({ pageSize: 1000, pageToken, labelSelector: labels });
    for (const j of page.items) ids.push(j.id);
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return ids;
}
