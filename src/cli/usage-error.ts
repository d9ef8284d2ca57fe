/** Bad flags or arguments found by the CLI itself, before any call (exit code 2). */
export class UsageError extends Error {
  override name = 'UsageError';
}
