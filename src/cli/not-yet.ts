/** Exit code for a command whose implementation has not landed yet (EX_UNAVAILABLE). */
export const EXIT_NOT_AVAILABLE = 69;

/** Placeholder action: says plainly that the command is not available yet, and exits non-zero. */
export function notYetAvailable(command: string): () => never {
  return () => {
    process.stderr.write(`herald ${command}: not available yet in this build\n`);
    process.exit(EXIT_NOT_AVAILABLE);
  };
}
