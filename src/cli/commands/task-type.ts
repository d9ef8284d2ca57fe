import type { Command } from 'commander';
import type { TaskTypeConfig } from '../../gen/herald/v1/task_type_service.js';
import { addClientOptions } from '../client-options.js';
import { commandAction, withClient } from '../command-action.js';
import { formatRate, parseRate } from '../parse-rate.js';
import { print, printJson } from '../output/print.js';
import { renderFields, renderTable } from '../output/table.js';
import { UsageError } from '../usage-error.js';

const HEADERS = ['TASK TYPE', 'MAX RUNNING', 'RATE', 'BURST', 'ALERTS', 'PAUSE AFTER DEAD', 'UPDATED'];

/** "dead→ops, missed→ops" (the default alert policy's events and task types), or "-". */
function alertsCell(c: TaskTypeConfig): string {
  const a = c.alerts;
  const parts = a ? ([['failure', a.onFailure], ['dead', a.onDead], ['missed', a.onMissed], ['watchdog', a.onWatchdog]] as const).filter(([, t]) => t !== '').map(([e, t]) => `${e}→${t}`) : [];
  return parts.length > 0 ? parts.join(', ') : '-';
}

function row(c: TaskTypeConfig): string[] {
  return [
    c.taskType,
    c.maxRunning > 0 ? String(c.maxRunning) : '-',
    formatRate(c.ratePerSecond),
    c.ratePerSecond > 0 ? String(c.burst > 0 ? c.burst : Math.max(1, Math.ceil(c.ratePerSecond))) : '-',
    alertsCell(c),
    c.pauseAfterDead > 0 ? String(c.pauseAfterDead) : '-',
    c.updatedUnixMs > 0 ? new Date(c.updatedUnixMs).toISOString() : '-',
  ];
}

function count(value: string, flag: string, zero = 'no limit'): number {
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${flag}: "${value}" is not a whole number (0 = ${zero})`);
  return Number(value);
}

interface SetFlags {
  maxRunning?: string;
  rate?: string;
  burst?: string;
  alertOnFailure?: string;
  alertOnDead?: string;
  alertOnMissed?: string;
  alertOnWatchdog?: string;
  pauseAfterDead?: string;
}

export function registerTaskTypeCommands(program: Command): void {
  const tt = program.command('task-type').description('per task type settings: max running at once, start rate, default alerts');

  addClientOptions(
    tt
      .command('set <taskType>')
      .description('set (replace) a task type\'s config; settings not given are off')
      .option('--max-running <n>', 'most runs RUNNING at once across the cluster (0 = no limit)')
      .option('--rate <rate>', 'most starts per second, e.g. 5/s, 300/m, 10/h (0 = no limit)')
      .option('--burst <n>', 'starts at once when the rate allows a burst (default: the rate per second, rounded up)')
      .option('--alert-on-failure <task-type>', 'default for jobs naming no alerts: an alert run of this task type for every failed attempt that will be retried')
      .option('--alert-on-dead <task-type>', 'default for jobs naming no alerts: an alert run of this task type for every run that goes DEAD')
      .option('--alert-on-missed <task-type>', 'default for jobs naming no alerts: an alert run of this task type for every slot recorded MISSED')
      .option('--alert-on-watchdog <task-type>', "default for jobs naming no alerts: an alert run of this task type when the leader's watchdog finds a due slot not fired")
      .option('--pause-after-dead <n>', 'default for jobs setting none: pause a job after n consecutive DEAD runs (0 = never)'),
  ).action(
    commandAction('task-type set', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [taskType] = cmd.processedArgs as [string];
        const f = cmd.opts<SetFlags>();
        const alerts = { onFailure: f.alertOnFailure ?? '', onDead: f.alertOnDead ?? '', onMissed: f.alertOnMissed ?? '', onWatchdog: f.alertOnWatchdog ?? '' };
        const anyAlert = Object.values(alerts).some((t) => t !== '');
        if (f.maxRunning === undefined && f.rate === undefined && !anyAlert && f.pauseAfterDead === undefined) {
          throw new UsageError('task-type set: give --max-running, --rate, an --alert-on-… flag and/or --pause-after-dead');
        }
        const config = await client.setTaskType(taskType, {
          maxRunning: f.maxRunning === undefined ? 0 : count(f.maxRunning, '--max-running'),
          ratePerSecond: f.rate === undefined ? 0 : parseRate(f.rate),
          burst: f.burst === undefined ? 0 : count(f.burst, '--burst'),
          ...(anyAlert ? { alerts } : {}),
          pauseAfterDead: f.pauseAfterDead === undefined ? 0 : count(f.pauseAfterDead, '--pause-after-dead', 'never'),
        });
        if (flags.json) printJson(config);
        else print(renderTable(HEADERS, [row(config)]));
      }),
    ),
  );

  addClientOptions(tt.command('ls').description('list task type configs')).action(
    commandAction('task-type ls', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const configs = await client.listTaskTypes();
        if (flags.json) printJson(configs);
        else print(configs.length === 0 ? 'no task type configs set\n' : renderTable(HEADERS, configs.map(row)));
      }),
    ),
  );

  addClientOptions(tt.command('get <taskType>').description('show one task type\'s config')).action(
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

  addClientOptions(tt.command('rm <taskType>').description('remove a task type\'s config (its limits and default alerts)')).action(
    commandAction('task-type rm', (cmd) =>
      withClient(cmd, async (client, flags) => {
        const [taskType] = cmd.processedArgs as [string];
        await client.deleteTaskType(taskType);
        if (flags.json) printJson({ taskType, deleted: true });
        else print(`config of task type ${taskType} removed\n`);
      }),
    ),
  );
}
