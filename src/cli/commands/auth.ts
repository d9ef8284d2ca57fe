// `herald auth`: bearer tokens (AuthService) — create (the secret printed once), ls, revoke —
// and `bootstrap-token`, which writes a fresh admin token file for `herald server
// --auth-bootstrap-file` (0600).
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { Role, type TokenInfo } from '../../gen/herald/v1/auth_service.js';
import { newTokenSecret } from '../../server/auth/token-secret.js';
import { roleName } from '../../server/auth/principal.js';
import { addClientOptions } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { print, printJson } from '../output/print.js';
import { renderTable } from '../output/table.js';
import { UsageError } from '../usage-error.js';

const HEADERS = ['NAME', 'ID', 'ROLE', 'TASK TYPES', 'CREATED', 'CREATED BY'];

function row(t: TokenInfo): string[] {
  return [t.name, t.id, roleName(t.role), t.taskTypes.join(',') || '-', t.createdUnixMs > 0 ? new Date(t.createdUnixMs).toISOString() : '-', t.createdBy || '-'];
}

const ROLES: Record<string, Role> = { admin: Role.ROLE_ADMIN, operator: Role.ROLE_OPERATOR, viewer: Role.ROLE_VIEWER, worker: Role.ROLE_WORKER };

export function registerAuthCommands(program: Command): void {
  const auth = program.command('auth').description('credentials: bearer tokens and their roles');
  const token = auth.command('token').description('bearer tokens (admin role needed)');

  addClientOptions(
    token
      .command('create')
      .description('create a token; its secret is printed once (the cluster keeps only a salted hash)')
      .requiredOption('--name <name>', 'unique name, recorded as the principal on what the token does')
      .requiredOption('--role <role>', 'admin, operator, viewer or worker')
      .option('--task-types <list>', 'worker tokens: the task types it may take, comma-separated'),
  ).action(
    commandAction('auth token create', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const f = cmd.opts<{ name: string; role: string; taskTypes?: string }>();
        const role = ROLES[f.role.toLowerCase()];
        if (role === undefined) throw new UsageError(`--role: "${f.role}" is not one of admin, operator, viewer, worker`);
        const taskTypes = (f.taskTypes ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
        const r = await client.createToken(f.name, role, taskTypes);
        if (flags.json) printJson({ token: r.token, secret: r.secret });
        else print(`${renderTable(HEADERS, [row(r.token)])}\ntoken (shown only now; pass it as --token or HERALD_TOKEN):\n${r.secret}\n`);
      }),
    ),
  );

  addClientOptions(token.command('ls').description('list tokens (never their secrets)')).action(
    commandAction('auth token ls', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const tokens = await client.listTokens();
        if (flags.json) printJson(tokens);
        else print(tokens.length === 0 ? 'no tokens\n' : renderTable(HEADERS, tokens.map(row)));
      }),
    ),
  );

  addClientOptions(token.command('revoke <nameOrId>').description('revoke a token: its next call, on any node, is refused')).action(
    commandAction('auth token revoke', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [nameOrId] = cmd.processedArgs as [string];
        const t = await client.revokeToken(nameOrId);
        if (flags.json) printJson(t);
        else print(`revoked ${t.name} (${t.id})\n`);
      }),
    ),
  );

  auth
    .command('bootstrap-token')
    .description('write a fresh admin token to a file (0600) for `herald server --auth-bootstrap-file`')
    .requiredOption('--out <file>', 'the file to write (refused if it exists)')
    .action(
      commandAction('auth bootstrap-token', (cmd) => {
        const { out } = cmd.opts<{ out: string }>();
        try {
          writeFileSync(out, newTokenSecret().token + '\n', { mode: 0o600, flag: 'wx' });
        } catch (e) {
          throw new UsageError(`--out ${out}: cannot create it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
        }
        print(`wrote an admin token to ${out}; start every server with --auth-bootstrap-file ${out}, and use it with --token "$(cat ${out})"\n`);
        return Promise.resolve();
      }),
    );
}
