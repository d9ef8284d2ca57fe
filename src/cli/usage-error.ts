/**
 * Bad flags or arguments found by the CLI itself, before any call (exit code 2). `problems`, when
 * given, lists several independent ones (each reported on its own line).
 */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly problems: readonly string[] = [],
  ) {
    super(message);
  }
}
