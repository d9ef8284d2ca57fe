/** A bad flag or value given to `npm run sim`: the CLI answers it with the usage (exit 2), not a stack trace. */
export class SimUsageError extends Error {
  override readonly name = 'SimUsageError';
}
