/**
 * `herald apply` lost a race: a job changed (or appeared) between the read its plan is based on
 * and the write, or a document's `version` is not the job's. Exit code 4 like any conflict.
 * `problems` lists each job concerned (each reported on its own line).
 */
export class ApplyConflictError extends Error {
  override name = 'ApplyConflictError';
  constructor(
    message: string,
    readonly problems: readonly string[] = [],
  ) {
    super(message);
  }
}
