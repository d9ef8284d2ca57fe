// `herald apply -f jobs.yaml`: jobs kept as files. Every document is read and validated before
// any call (a bad file changes nothing), then a plan is made from one read of the jobs and
// written with optimistic concurrency (see apply/apply-plan.ts). Formats: job-doc/.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { addClientOptions, type ClientFlags } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { EXIT } from '../exit-codes.js';
import { parseLabels } from '../job-spec-flags.js';
import { print, printJson } from '../output/print.js';
import { UsageError } from '../usage-error.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

interface ApplyFlags extends ClientFlags {
  filename?: string[];
  dryRun?: boolean;
  prune?: boolean;
  selector?: string[];
}

export function registerApplyCommand(program: Command): void {
  addClientOptions(
    program
      .command('apply')
      .description('create or update the jobs described in YAML or JSON files (by id); --prune deletes the labelled jobs the files no longer list'),
  )
    .option('-f, --filename <file>', 'a YAML or JSON file of job documents ("-" reads stdin; repeatable)', collect)
    .option('--dry-run', 'print what would change (per field) and change nothing')
    .option('--prune', 'delete jobs matching --selector that no document lists')
    .option('--selector <key=value>', 'labels the jobs to prune carry (repeatable, or comma-separated)', collect)
    .action(
      commandAction('apply', async (cmd) => {
        const f = cmd.opts() as ApplyFlags;
        if (!f.filename || f.filename.length === 0) throw new UsageError('-f <file> is required (a YAML or JSON file of job documents, or - for stdin)');
        if (f.prune && !f.selector) throw new UsageError('--prune needs --selector key=value: only jobs with those labels are ever deleted');
        if (!f.prune && f.selector) throw new UsageError('--selector only applies with --prune');
        if (f.filename.filter((x) => x === '-').length > 1) throw new UsageError('-f -: stdin can be read once');
        const selector = f.selector ? parseLabels(f.selector.flatMap((s) => s.split(',')).filter((s) => s !== ''), '--selector') : undefined;
        if (selector !== undefined && Object.keys(selector).length === 0) throw new UsageError('--selector: give at least one key=value');

        // Loaded here, not at startup: the proto descriptor and YAML are only needed by apply.
        const { loadJobSpecDescriptor } = await import('../job-doc/job-spec-descriptor.js');
        const { JobDocCodec } = await import('../job-doc/job-doc-codec.js');
        const { readJobDocuments, readSource } = await import('../apply/read-job-files.js');
        const { planApply, executePlan } = await import('../apply/apply-plan.js');
        const { renderOutcomes, renderPlan, planJson } = await import('../output/apply-view.js');

        const codec = new JobDocCodec(loadJobSpecDescriptor());
        const jobs = readJobDocuments(
          f.filename.map((path) => readSource(path, () => readFileSync(0, 'utf8'))),
          codec,
        );
        return withClient(cmd, async (client) => {
          const plan = await planApply(client, codec, jobs, selector);
          if (f.dryRun) {
            if (f.json) printJson(planJson(plan));
            else print(renderPlan(plan));
            return EXIT.ok;
          }
          const outcomes = await executePlan(client, codec, plan);
          if (f.json) printJson(planJson(plan, outcomes));
          else print(renderOutcomes(outcomes));
          const firstError = outcomes.find((o) => o.error)?.error;
          if (firstError === undefined) return EXIT.ok;
          const { exitCodeFor } = await import('../exit-codes.js');
          return exitCodeFor(firstError);
        });
      }),
    );
}
