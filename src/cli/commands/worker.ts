import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseDuration } from '../../client/duration.js';
import { resolveEndpoints, resolveTls, resolveToken } from '../client-options.js';
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
    .option('--webhook <url>', 'POST each run\'s payload (an alert run: the event as JSON) to this URL, signed, with the run id as Idempotency-Key; a 5xx or timeout is a retryable failure')
    .option('--webhook-secret <secret>', 'HMAC-SHA256 key of the X-Herald-Signature header (else $HERALD_WEBHOOK_SECRET)')
    .option('--webhook-secret-file <path>', 'read the HMAC key from a file (trailing newline dropped)')
    .option('--webhook-timeout <duration>', 'per-attempt request timeout', '10s')
    .option('--worker-id <id>', 'stable worker id (default: host-pid-random)')
    .option('--shutdown-grace <duration>', 'how long a drain waits for in-flight runs before aborting them', '30s')
    .option('--endpoints <list>', 'client addresses host:port,... (default: $HERALD_ENDPOINTS, else the local dev cluster)')
    .option('--ca <file>', 'TLS: CA bundle (PEM) of the cluster\'s certificates (default: $HERALD_CA); turns TLS on')
    .option('--cert <file>', 'TLS: client certificate (PEM) (default: $HERALD_CERT)')
    .option('--key <file>', 'TLS: client key (PEM) (default: $HERALD_KEY)')
    .option('--token <token>', 'bearer token: a worker token for these task types (default: $HERALD_TOKEN, else the dev cluster\'s admin token)')
    .option('--json', 'one JSON object per line for each run')
    .option('--verbose', 'also log the worker library\'s info messages')
    .action(
      commandAction('worker', async (cmd) => {
        const o = cmd.opts() as {
          taskType?: string[];
          concurrency: string;
          exec?: string;
          webhook?: string;
          webhookSecret?: string;
          webhookSecretFile?: string;
          webhookTimeout: string;
          workerId?: string;
          shutdownGrace: string;
          endpoints?: string;
          ca?: string;
          cert?: string;
          key?: string;
          token?: string;
          json?: boolean;
          verbose?: boolean;
        };
        const taskTypes = o.taskType ?? ['demo'];
        const concurrency = Number(o.concurrency);
        if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
          throw new UsageError(`--concurrency: expected a whole number 1..10000, got "${o.concurrency}"`);
        }
        if (o.exec !== undefined && o.exec.trim() === '') throw new UsageError('--exec: empty command');
        const webhook = o.webhook === undefined ? undefined : webhookOptions(o);
        let worker;
        try {
          worker = createDemoWorker({
            endpoints: resolveEndpoints(o),
            tls: resolveTls(o),
            token: resolveToken(o),
            taskTypes,
            concurrency,
            exec: o.exec,
            webhook,
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
        process.stderr.write(`worker ${worker.workerId} starting (task types: ${taskTypes.join(', ')}; concurrency ${concurrency}; ${webhook ? `webhook ${webhook.url}` : o.exec !== undefined ? 'exec' : 'echo'} mode)\n`);
        // run(): the first SIGTERM/SIGINT drains (in-flight runs finish and report), a second forces.
        await worker.run();
        process.stderr.write(`worker ${worker.workerId} stopped\n`);
      }),
    );
}

/** --webhook and its secret: from the flag, else a file, else $HERALD_WEBHOOK_SECRET (none: unsigned). */
function webhookOptions(o: { webhook?: string; webhookSecret?: string; webhookSecretFile?: string; webhookTimeout: string; exec?: string }): {
  url: string;
  secret: string | undefined;
  timeoutMs: number;
} {
  if (o.exec !== undefined) throw new UsageError('--webhook and --exec cannot be combined: a worker either posts or runs a command');
  let url: URL;
  try {
    url = new URL(o.webhook!);
  } catch {
    throw new UsageError(`--webhook: "${o.webhook}" is not a URL (e.g. https://hooks.example.com/herald)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`--webhook: ${url.protocol} is not http: or https:`);
  if (o.webhookSecret !== undefined && o.webhookSecretFile !== undefined) throw new UsageError('--webhook-secret and --webhook-secret-file set the same thing; give one');
  let secret = o.webhookSecret ?? process.env.HERALD_WEBHOOK_SECRET;
  if (o.webhookSecretFile !== undefined) {
    try {
      secret = readFileSync(o.webhookSecretFile, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      throw new UsageError(`--webhook-secret-file: cannot read ${o.webhookSecretFile}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (secret === '') throw new UsageError('--webhook secret is empty; give a key or none');
  return { url: url.toString(), secret, timeoutMs: parseDuration(o.webhookTimeout, '--webhook-timeout') };
}
