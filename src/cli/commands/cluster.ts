import type { Command } from 'commander';
import type { GetStatusResponse } from '../../gen/herald/v1/cluster_service.js';
import { addClientOptions, resolveTimeoutMs } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { EXIT } from '../exit-codes.js';
import { MEMBER_HEADERS, memberJson, joinMembers, memberRow, statusHeadline, statusJson, unservedLine, unservedOf } from '../output/cluster-view.js';
import { print, printJson } from '../output/print.js';
import { renderTable } from '../output/table.js';

export function registerClusterCommands(program: Command): void {
  const cluster = program.command('cluster').description('cluster status, membership and leadership');

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

  addClientOptions(
    cluster
      .command('add <id>')
      .description('add a started node (`herald server --join`) as a learner: it receives the log and a snapshot, and votes once promoted')
      .requiredOption('--peer-addr <host:port>', "the new node's peer (Raft) address")
      .requiredOption('--client-addr <host:port>', "the new node's client (API) address"),
  ).action(
    commandAction('cluster add', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [id] = cmd.processedArgs as [string];
        const o = cmd.opts<{ peerAddr: string; clientAddr: string }>();
        // The new node's incarnation (chosen at its first start) is what the cluster will let in.
        // The leader reads it from the new node as a member (a joining node holds no tokens, so
        // this CLI's token could not); the answer lists it.
        const members = await client.addMember({ id, peerAddress: o.peerAddr, clientAddress: o.clientAddr, incarnation: '' });
        const incarnation = members.find((m) => m.id === id)?.incarnation ?? '';
        if (flags.json) printJson({ added: id, incarnation, members: members.map(memberJson) });
        else print(`${id} added as a learner (incarnation ${incarnation}); promote it once it caught up: herald cluster promote ${id}\n`);
      }),
    ),
  );

  addClientOptions(cluster.command('promote <id>').description('make a learner a voter (refused while it trails the leader by more than the catch-up bound)')).action(
    commandAction('cluster promote', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [id] = cmd.processedArgs as [string];
        const members = await client.promoteMember(id);
        if (flags.json) printJson({ promoted: id, members: members.map(memberJson) });
        else print(`${id} is a voter\n`);
      }),
    ),
  );

  addClientOptions(cluster.command('remove <id>').description('remove a member (voter or learner; a leader removing itself hands over once the removal commits)')).action(
    commandAction('cluster remove', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [id] = cmd.processedArgs as [string];
        const members = await client.removeMember(id);
        if (flags.json) printJson({ removed: id, members: members.map(memberJson) });
        else print(`${id} removed; members now ${members.map((m) => m.id).join(', ')}\n`);
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
