import type { Command } from 'commander';
import { parseDuration } from '../../client/duration.js';
import { resolveEndpoints, resolveTls } from '../client-options.js';
import { commandAction } from '../command-action.js';
import { UsageError } from '../usage-error.js';
import { createDemoWorker } from '../worker/demo-worker.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run a demo worker: echo each run, or run a shell command per run (SIGTERM drains, a second one forces)')
    .option('--task-type <type>', 'task type to take runs of (repeatable)', collect)
    .option('--concurrency <n>', 'runs executed at once', '4')
    .option('--exec <command>', 'shell command per run; env: HERALD_RUN_ID, HERALD_JOB_ID, HERALD_ATTEMPT, HERALD_FENCING_TOKEN, HERALD_PAYLOAD, ...; non-zero exit = retryable failure')
    .option('--worker-id <id>', 'stable worker id (default: host-pid-random)')
    .option('--shutdown-grace <duration>', 'how long a drain waits for in-flight runs before aborting them', '30s')
    .option('--endpoints <list>', 'client addresses host:port,... (default: $HERALD_ENDPOINTS, else the local dev cluster)')
    .option('--ca <file>', 'TLS: CA bundle (PEM) of the cluster\'s certificates (default: $HERALD_CA); turns TLS on')
    .option('--cert <file>', 'TLS: client certificate (PEM) (default: $HERALD_CERT)')
    .option('--key <file>', 'TLS: client key (PEM) (default: $HERALD_KEY)')
    .option('--json', 'one JSON object per line for each run')
    .option('--verbose', 'also log the worker library\'s info messages')
    .action(
      commandAction('worker', async (cmd) => {
        const o = cmd.opts() as {
          taskType?: string[];
          concurrency: string;
          exec?: string;
          workerId?: string;
          shutdownGrace: string;
          endpoints?: string;
          ca?: string;
          cert?: string;
          key?: string;
          json?: boolean;
          verbose?: boolean;
        };
        const taskTypes = o.taskType ?? ['demo'];
        const concurrency = Number(o.concurrency);
        if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
          throw new UsageError(`--concurrency: expected a whole number 1..10000, got "${o.concurrency}"`);
        }
        if (o.exec !== undefined && o.exec.trim() === '') throw new UsageError('--exec: empty command');
        let worker;
        try {
          worker = createDemoWorker({
            endpoints: resolveEndpoints(o),
            tls: resolveTls(o),
            taskTypes,
            concurrency,
            exec: o.exec,
            workerId: o.workerId,
            shutdownGraceMs: parseDuration(o.shutdownGrace, '--shutdown-grace'),
            json: Boolean(o.json),
            write: (line) => process.stdout.write(line + '\n'),
            notice: (line) => process.stderr.write(line + '\n'),
            verbose: Boolean(o.verbose),
          });
        } catch (e) {
          // The Worker constructor's TypeErrors are bad flags (worker id, ...).
          throw e instanceof TypeError ? new UsageError(e.message) : e;
        }
        process.stderr.write(`worker ${worker.workerId} starting (task types: ${taskTypes.join(', ')}; concurrency ${concurrency}; ${o.exec !== undefined ? 'exec' : 'echo'} mode)\n`);
        // run(): the first SIGTERM/SIGINT drains (in-flight runs finish and report), a second forces.
        await worker.run();
        process.stderr.write(`worker ${worker.workerId} stopped\n`);
      }),
    );
}
