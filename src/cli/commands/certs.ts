import type { Command } from 'commander';
import { mkdir } from 'node:fs/promises';
import { commandAction } from '../command-action.js';
import { CertsError, initCa, issueCert } from '../certs/openssl-certs.js';
import { print } from '../output/print.js';
import { UsageError } from '../usage-error.js';

function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${name} must be a positive integer (got "${v}")`);
  return n;
}

/** CertsError (openssl missing or failing, a CA in the way) is the user's to fix: a usage error. */
async function certsStep<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof CertsError) throw new UsageError(e.message);
    throw e;
  }
}

export function registerCertsCommands(program: Command): void {
  const certs = program.command('certs').description('create a CA and node/client certificates for TLS (uses openssl)');

  certs
    .command('init')
    .description('create a CA (ca.crt, ca.key) in --dir')
    .option('--dir <dir>', 'where the CA goes', './certs')
    .option('--days <n>', 'validity in days', '3650')
    .option('--name <cn>', 'the CA certificate\'s common name', 'herald CA')
    .action(
      commandAction('certs init', async (cmd) => {
        const f = cmd.opts() as { dir: string; days: string; name: string };
        await mkdir(f.dir, { recursive: true, mode: 0o700 });
        const ca = await certsStep(() => initCa(f.dir, { days: positiveInt('--days', f.days), name: f.name }));
        print(`CA certificate ${ca.cert}\nCA key         ${ca.key} (keep it secret; it signs every certificate the cluster trusts)`);
      }),
    );

  certs
    .command('issue')
    .description('issue <name>.crt/<name>.key signed by the CA in --dir: for a member (--member) or a client')
    .requiredOption('--name <name>', 'file name and common name, e.g. n1 or ops-alice')
    .option('--member <id>', 'a cluster member\'s certificate: names member <id> (SAN URI urn:herald:member:<id>); serves both ports')
    .option('--role <role>', 'a client certificate that authenticates as a principal with this role (admin, operator, viewer, worker; SAN URI urn:herald:role:<role>, named by --name)')
    .option('--task-types <list>', 'with --role worker: the task types it may take, comma-separated')
    .option('--host <list>', 'host names / IP addresses clients dial the node at, comma-separated (SANs)', '')
    .option('--dir <dir>', 'the CA\'s directory (from certs init); the files go there too', './certs')
    .option('--out <dir>', 'write the certificate and key here instead')
    .option('--days <n>', 'validity in days', '825')
    .action(
      commandAction('certs issue', async (cmd) => {
        const f = cmd.opts() as { name: string; member?: string; host: string; dir: string; out?: string; days: string; role?: string; taskTypes?: string };
        const hosts = f.host.split(',').map((h) => h.trim()).filter((h) => h !== '');
        if (f.member !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(f.member)) throw new UsageError(`--member "${f.member}" is not a member id`);
        if (f.role !== undefined && !['admin', 'operator', 'viewer', 'worker'].includes(f.role)) throw new UsageError(`--role "${f.role}": one of admin, operator, viewer, worker`);
        const taskTypes = (f.taskTypes ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '');
        if (taskTypes.length > 0 && f.role !== 'worker') throw new UsageError('--task-types goes with --role worker');
        if (taskTypes.some((t) => !/^[A-Za-z0-9._:-]{1,128}$/.test(t))) throw new UsageError(`--task-types "${f.taskTypes}": task types are [A-Za-z0-9._:-]`);
        if (f.out !== undefined) await mkdir(f.out, { recursive: true, mode: 0o700 });
        const r = await certsStep(() =>
          issueCert({ caDir: f.dir, outDir: f.out, name: f.name, member: f.member, hosts, days: positiveInt('--days', f.days), ...(f.role !== undefined ? { role: f.role, taskTypes } : {}) }),
        );
        print(`certificate ${r.cert}\nkey         ${r.key}`);
      }),
    );
}
