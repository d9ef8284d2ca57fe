// Turns any error a command throws into one line on stderr (or one JSON object with --json) and
// the exit code that says what went wrong. Stack traces are for bugs, not for "job not found".
import { status } from '@grpc/grpc-js';
import { HeraldClientError, InvalidSpecError } from '../client/errors.js';
import { exitCodeFor, type ExitCode } from './exit-codes.js';
import { ApplyConflictError } from './apply/apply-conflict-error.js';
import { UsageError } from './usage-error.js';
import { WaitTimeoutError } from './wait-for-run.js';

function kind(err: unknown): string {
  if (err instanceof UsageError || err instanceof InvalidSpecError) return 'INVALID_ARGUMENT';
  if (err instanceof HeraldClientError) return err.code;
  if (err instanceof WaitTimeoutError) return 'TIMEOUT';
  if (err instanceof ApplyConflictError) return 'CONFLICT';
  return 'ERROR';
}

function message(err: unknown): string {
  if (err instanceof HeraldClientError) {
    let m = err.message;
    if (err.grpcCode === status.UNIMPLEMENTED) {
      m = `the node at ${err.address ?? 'the endpoint'} does not serve this API (is it running the scheduler state machine?): ${m}`;
    } else if (err.grpcCode === status.UNAVAILABLE && /ECONNREFUSED|No connection established|connect/i.test(m)) {
      m = `cannot reach the cluster at ${err.address ?? 'the endpoints'} (is it running? set --endpoints or HERALD_ENDPOINTS): ${m}`;
    }
    return m;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/\s*Resolution note:\s*$/, '').trim();
}

/** One line, no newlines inside: multi-line server messages are folded. */
export function errorLine(command: string, err: unknown): string {
  return `herald ${command}: ${kind(err)}: ${oneLine(message(err))}`;
}

/** Several independent problems one error reports (a file's bad documents), each for its own line. */
function problemsOf(err: unknown): readonly string[] {
  return err instanceof UsageError || err instanceof ApplyConflictError ? err.problems : [];
}

/** Writes the error and returns the exit code to use. */
export function reportError(command: string, err: unknown, json: boolean): ExitCode {
  const code = exitCodeFor(err);
  const problems = problemsOf(err);
  if (json) {
    const body: Record<string, unknown> = { error: { command, code: kind(err), message: oneLine(message(err)), exitCode: code } };
    if (err instanceof HeraldClientError && err.heraldCode) (body.error as Record<string, unknown>).heraldCode = err.heraldCode;
    if (problems.length > 0) (body.error as Record<string, unknown>).problems = problems.map(oneLine);
    process.stderr.write(JSON.stringify(body) + '\n');
  } else {
    if (problems.length > 1) for (const p of problems) process.stderr.write(`herald ${command}: ${kind(err)}: ${oneLine(p)}\n`);
    process.stderr.write(errorLine(command, err) + '\n');
  }
  return code;
}
