// Wraps a command's body: errors become one line (or JSON) on stderr plus a meaningful exit code,
// and the exit code is set rather than forced with process.exit so stdout is flushed first.
import type { Command } from 'commander';
import type { HeraldClient } from '../client/herald-client.js';
import { clientFromFlags, type ClientFlags } from './client-options.js';
import { reportError } from './report-error.js';

export type ActionBody = (cmd: Command) => Promise<number | void>;

/** A commander action for `body`; `name` (e.g. "job get") prefixes error lines. */
export function commandAction(name: string, body: ActionBody): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const json = Boolean((cmd.opts() as { json?: boolean }).json);
    try {
      const code = await body(cmd);
      process.exitCode = code ?? 0;
    } catch (e) {
      process.exitCode = reportError(name, e, json);
    }
  };
}

/** Runs `fn` with a client built from the command's flags and always closes it. */
export async function withClient<T>(cmd: Command, fn: (client: HeraldClient, flags: ClientFlags) => Promise<T>): Promise<T> {
  const flags = cmd.opts() as ClientFlags;
  const client = clientFromFlags(flags);
  try {
    return await fn(client, flags);
  } finally {
    client.close();
  }
}
