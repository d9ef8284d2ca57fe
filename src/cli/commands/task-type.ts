import type { Command } from 'commander';
import type { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import { addClientOptions } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { formatRate, parseRate } from '../parse-rate.js';
import { print, printJson } from '../output/print.js';
import { renderFields, renderTable } from '../output/table.js';
import { UsageError } from '../usage-error.js';

const HEADERS = ['TASK TYPE', 'MAX RUNNING', 'RATE', 'BURST', 'UPDATED'];

function row(c: TaskTypeConfig): string[] {
  return [
    c.taskType,
    c.maxRunning > 0 ? String(c.maxRunning) : '-',
    formatRate(c.ratePerSecond),
    c.ratePerSecond > 0 ? String(c.burst > 0 ? c.burst : Math.max(1, Math.ceil(c.ratePerSecond))) : '-',
    c.updatedUnixMs > 0 ? new Date(c.updatedUnixMs).toISOString() : '-',
  ];
}

function count(value: string, flag: string): number {
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${flag}: "${value}" is not a whole number (0 = no limit)`);
  return Number(value);
}

interface SetFlags {
  maxRunning?: string;
  rate?: string;
  burst?: string;
}

export function registerTaskTypeCommands(program: Command): void {
  const tt = program.command('task-type').description('per task type limits: max running at once, start rate');

  addClientOptions(
    tt
      .command('set <taskType>')
      .description('set (replace) a task type\'s limits; limits not given are off')
      .option('--max-running <n>', 'most runs RUNNING at once across the cluster (0 = no limit)')
      .option('--rate <rate>', 'most starts per second, e.g. 5/s, 300/m, 10/h (0 = no limit)')
      .option('--burst <n>', 'starts at once when the rate allows a burst (default: the rate per second, rounded up)'),
  ).action(
    commandAction('task-type set', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [taskType] = cmd.processedArgs as [string];
        const f = cmd.opts<SetFlags>();
        if (f.maxRunning === undefined && f.rate === undefined) throw new UsageError('task-type set: give --max-running and/or --rate');
        const config = await client.setTaskType(taskType, {
          maxRunning: f.maxRunning === undefined ? 0 : count(f.maxRunning, '--max-running'),
          ratePerSecond: f.rate === undefined ? 0 : parseRate(f.rate),
          burst: f.burst === undefined ? 0 : count(f.burst, '--burst'),
        });
        if (flags.json) printJson(config);
        else print(renderTable(HEADERS, [row(config)]));
      }),
    ),
  );

  addClientOptions(tt.command('ls').description('list task type limits')).action(
    commandAction('task-type ls', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const configs = await client.listTaskTypes();
        if (flags.json) printJson(configs);
        else print(configs.length === 0 ? 'no task type limits set\n' : renderTable(HEADERS, configs.map(row)));
      }),
    ),
  );

  addClientOptions(tt.command('get <taskType>').description('show one task type\'s limits')).action(
    commandAction('task-type get', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [taskType] = cmd.processedArgs as [string];
        const c = await client.getTaskType(taskType);
        if (flags.json) printJson(c);
        else {
          const r = row(c);
          print(renderFields(HEADERS.map((h, i) => [h.toLowerCase(), r[i]!] as const)));
        }
      }),
    ),
  );

  addClientOptions(tt.command('rm <taskType>').description('remove a task type\'s limits')).action(
    commandAction('task-type rm', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [taskType] = cmd.processedArgs as [string];
        await client.deleteTaskType(taskType);
        if (flags.json) printJson({ taskType, deleted: true });
        else print(`limits of task type ${taskType} removed\n`);
      }),
    ),
  );
}
