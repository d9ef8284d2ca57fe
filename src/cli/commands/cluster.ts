import type { Command } from 'commander';
import type { GetStatusResponse } from '../../gen/herald/v1/cluster_service.js';
import { addClientOptions, resolveTimeoutMs } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { EXIT } from '../exit-codes.js';
import { MEMBER_HEADERS, joinMembers, memberRow, statusHeadline, statusJson, unservedLine, unservedOf } from '../output/cluster-view.js';
import { print, printJson } from '../output/print.js';
import { renderTable } from '../output/table.js';

export function registerClusterCommands(program: Command): void {
  const cluster = program.command('cluster').description('cluster status and leadership');

  addClientOptions(cluster.command('status').description('members with role, term, commit/applied and match index, last contact, health (exit 5 without a leader)')).action(
    commandAction('cluster status', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const base = await client.status();
        // Each member's own view, asked directly (no redirects) and in parallel; a member that
        // does not answer quickly is shown as unreachable instead of stalling the whole command.
        const perMember = Math.min(resolveTimeoutMs(flags), 2_000);
        const own = new Map<string, GetStatusResponse | Error>();
        await Promise.all(
          base.members
            .filter((m) => m.clientAddress !== '')
            .map(async (m) => {
              try {
                own.set(m.id, m.id === base.nodeId ? base : await client.status({ address: m.clientAddress, deadlineMs: perMember }));
              } catch (e) {
                own.set(m.id, e instanceof Error ? e : new Error(String(e)));
              }
            }),
        );
        const views = joinMembers(base, own);
        if (flags.json) printJson(statusJson(base, views));
        else print(statusHeadline(base) + '\n' + renderTable(MEMBER_HEADERS, views.map(memberRow)) + unservedLine(unservedOf(base, views)));
        return base.leaderId ? EXIT.ok : EXIT.unavailable;
      }),
    ),
  );

  addClientOptions(cluster.command('transfer [target]').description('move leadership to target (default: the most up-to-date follower)')).action(
    commandAction('cluster transfer', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [target] = cmd.processedArgs as [string | undefined];
        const res = await client.transferLeadership(target ?? '');
        if (flags.json) printJson(res);
        else print(`leader is now ${res.leaderId} (${res.leaderAddress || 'address unknown'})\n`);
      }),
    ),
  );
}
