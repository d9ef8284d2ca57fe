import type { Command } from 'commander';
import { notYetAvailable } from '../not-yet.js';

export function registerServerCommand(program: Command): void {
  program
    .command('server')
    .description('run one cluster node (client port + peer port)')
    .requiredOption('--id <id>', 'this node id, e.g. n1')
    .requiredOption('--peers <list>', 'all members: n1=127.0.0.1:7101,n2=127.0.0.1:7102,...')
    .option('--peer-addr <host:port>', 'listen address of the peer (Raft) port')
    .option('--client-addr <host:port>', 'listen address of the client (API) port')
    .option('--data-dir <dir>', 'data directory', './data')
    .action(notYetAvailable('server'));
}
