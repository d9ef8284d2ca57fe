import type { Command } from 'commander';
import { parseDuration } from '../../client/duration.js';
import { commandAction } from '../command-action.js';
import { DEFAULT_DEV_BASE_PORT, DEFAULT_DEV_DATA_DIR } from '../dev/dev-ports.js';
import { parseBasePort, parseNodeCount } from '../dev/dev-state.js';
import { resolve } from 'node:path';
import { UsageError } from '../usage-error.js';

export function registerDevCommand(program: Command): void {
  const dev = program
    .command('dev')
    .description('run a local 3- or 5-node cluster, a demo worker and demo schedules (data in ./.herald); Ctrl-C stops everything')
    .option('--data-dir <dir>', 'data directory (node data, logs, dev.json)', DEFAULT_DEV_DATA_DIR)
    .option(
      '--base-port <port>',
      `node i listens on base+i (client), base+10+i (peer), base+20+i (metrics); default ${DEFAULT_DEV_BASE_PORT}, or the one the data dir was created with`,
    )
    .option('--nodes <n>', 'cluster size, 3 or 5 (default 3, or what the data dir was created with)')
    .option('--no-demo', 'do not create the demo schedules')
    .option('--no-worker', 'do not start the demo worker')
    .option('--concurrency <n>', 'demo worker concurrency', '4')
    .option('--log-level <level>', 'log level of the nodes (their logs go to <data-dir>/<id>.log)', 'info')
    .option('--start-timeout <duration>', 'how long to wait for the nodes and a leader', '60s')
    .action(
      commandAction('dev', async (cmd) => {
        const o = cmd.opts() as {
          dataDir: string;
          basePort?: string;
          nodes?: string;
          demo: boolean;
          worker: boolean;
          concurrency: string;
          logLevel: string;
          startTimeout: string;
        };
        const concurrency = Number(o.concurrency);
        if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency: expected a whole number >= 1, got "${o.concurrency}"`);
        // Loaded on use: dev reads the server command's flags, which pulls in the whole node.
        const { runDev } = await import('../dev/run-dev.js');
        return runDev({
          dataDir: o.dataDir,
          basePort: o.basePort === undefined ? undefined : parseBasePort(o.basePort),
          nodes: o.nodes === undefined ? undefined : parseNodeCount(o.nodes),
          demoJobs: o.demo,
          worker: o.worker,
          concurrency,
          logLevel: o.logLevel,
          startTimeoutMs: parseDuration(o.startTimeout, '--start-timeout'),
        });
      }),
    );
  dev
    .command('add-node')
    .description('start one more node in the running `herald dev` and make it a voter (join, add as learner, promote once caught up)')
    .option('--json', 'print the result as JSON')
    .action(
      commandAction('dev add-node', async (cmd) => {
        // `herald dev add-node --data-dir X`: dev's own --data-dir names the running cluster.
        const o = cmd.optsWithGlobals() as { dataDir: string; json?: boolean };
        const { requestDev, DevNotRunning } = await import('../dev/dev-control.js');
        try {
          const done = await requestDev(resolve(o.dataDir), { op: 'add-node' }, (line) => {
            if (!o.json) process.stdout.write(`${line}\n`);
          });
          if (o.json) process.stdout.write(JSON.stringify(done) + '\n');
          return 0;
        } catch (e) {
          if (e instanceof DevNotRunning) throw new UsageError(e.message);
          throw e;
        }
      }),
    );
}
