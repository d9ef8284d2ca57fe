// How `herald apply` shows its plan and its outcome: one line per job, its field changes
// indented under it, and a summary line; or one JSON object for scripts.
import type { ApplyAction, ItemOutcome, PlanItem } from '../apply/apply-plan.js';
import { formatChange } from '../job-doc/doc-diff.js';

const PLANNED: Record<ApplyAction, string> = { create: 'create', update: 'update', unchanged: 'unchanged', delete: 'delete' };
const DONE: Record<ApplyAction, string> = { create: 'created', update: 'updated', unchanged: 'unchanged', delete: 'deleted' };

function itemLine(item: PlanItem, verb: string, newVersion?: number): string {
  const version =
    item.action === 'create' ? (newVersion !== undefined ? ` (version ${newVersion})` : '')
    : item.action === 'update' && newVersion !== undefined ? ` (version ${item.version} → ${newVersion})`
    : item.version !== undefined ? ` (version ${item.version})`
    : '';
  return `${verb} job ${item.id}${version}\n`;
}

function changeLines(item: PlanItem): string {
  return item.changes.map((c) => `    ${formatChange(c)}\n`).join('');
}

function counts(actions: ApplyAction[], words: Record<ApplyAction, string>): string {
  const order: ApplyAction[] = ['create', 'update', 'unchanged', 'delete'];
  return order.map((a) => `${actions.filter((x) => x === a).length} ${words[a]}`).join(', ');
}

export function renderPlan(plan: readonly PlanItem[]): string {
  const body = plan.map((item) => itemLine(item, PLANNED[item.action]) + changeLines(item)).join('');
  return `${body}dry run: ${counts(plan.map((p) => p.action), { create: 'to create', update: 'to update', unchanged: 'unchanged', delete: 'to delete' })}; nothing was changed\n`;
}

export function renderOutcomes(outcomes: readonly ItemOutcome[]): string {
  const body = outcomes
    .map((o) => (o.error ? `FAILED ${PLANNED[o.item.action]} job ${o.item.id}: ${o.error.message}\n` : itemLine(o.item, DONE[o.item.action], o.newVersion) + changeLines(o.item)))
    .join('');
  const ok = outcomes.filter((o) => !o.error).map((o) => o.item.action);
  const failed = outcomes.length - ok.length;
  return `${body}applied: ${counts(ok, DONE)}${failed ? `; ${failed} failed` : ''}\n`;
}

export function planJson(plan: readonly PlanItem[], outcomes?: readonly ItemOutcome[]): Record<string, unknown> {
  const byItem = new Map(outcomes?.map((o) => [o.item, o]));
  return {
    dryRun: outcomes === undefined,
    items: plan.map((item) => {
      const o = byItem.get(item);
      return {
        id: item.id,
        action: item.action,
        ...(item.where !== undefined ? { source: item.where } : {}),
        ...(item.version !== undefined ? { version: item.version } : {}),
        ...(o?.newVersion !== undefined ? { newVersion: o.newVersion } : {}),
        ...(o?.error ? { error: o.error.message } : {}),
        changes: item.changes,
      };
    }),
  };
}
