// Echo mode of the demo worker: prints each run it receives (one line, or one JSON object per
// line with --json) and succeeds. `herald dev` uses it to show fires as they happen.
import type { Handler, RunContext } from '../../client/worker/run-context.js';
import { formatMs, payloadPreview, utf8OrUndefined } from '../output/format.js';

export type LineWriter = (line: string) => void;

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

export function describeRun(ctx: RunContext, nowMs = Date.now()): string {
  const r = ctx.run;
  const late = Math.max(0, nowMs - r.scheduledMs);
  const kind = r.manual ? ' (manual)' : r.backfilled ? ' (backfill)' : '';
  return (
    `${clock(nowMs)}  ${r.taskType}  run ${r.id}  job ${r.jobId}${kind}  attempt ${ctx.attempt}  token ${ctx.fencingToken}` +
    `  slot ${new Date(r.slotMs).toISOString()}  late ${formatMs(late) === '-' ? '0ms' : formatMs(late)}  payload ${payloadPreview(r.payload)}`
  );
}

export function runLineJson(ctx: RunContext, event: string, extra: Record<string, unknown> = {}): string {
  const r = ctx.run;
  return JSON.stringify({
    event,
    atUnixMs: Date.now(),
    runId: r.id,
    jobId: r.jobId,
    taskType: r.taskType,
    attempt: ctx.attempt,
    fencingToken: ctx.fencingToken,
    slotUnixMs: r.slotMs,
    scheduledUnixMs: r.scheduledMs,
    manual: r.manual,
    backfilled: r.backfilled,
    payload: utf8OrUndefined(r.payload) ?? null,
    ...extra,
  });
}

export function echoHandler(write: LineWriter, json: boolean): Handler {
  return (ctx) => {
    write(json ? runLineJson(ctx, 'run') : describeRun(ctx));
    return { echoed: ctx.run.id, attempt: ctx.attempt };
  };
}
