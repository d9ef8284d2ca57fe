// Exec mode of the demo worker: runs a shell command per run with the run described in the
// environment. Exit 0 succeeds (stdout becomes the run's output); any other exit is a retryable
// failure. When the run's signal fires (lease lost, cancelled, timeout, forced shutdown) the
// command's whole process group gets SIGTERM, then SIGKILL if it lingers.
import { spawn } from 'node:child_process';
import { HandlerError } from '../../client/worker/handler-errors.js';
import type { Handler, RunContext } from '../../client/worker/run-context.js';
import { utf8OrUndefined } from '../output/format.js';
import { describeRun, runLineJson, type LineWriter } from './echo-handler.js';

const MAX_OUTPUT_BYTES = 16 * 1024;
const KILL_GRACE_MS = 5_000;

export function runEnv(ctx: RunContext): Record<string, string> {
  const r = ctx.run;
  const text = utf8OrUndefined(r.payload);
  // Environment strings cannot hold NUL; such payloads go base64 with a marker variable.
  const binary = text === undefined || text.includes('\0');
  return {
    HERALD_RUN_ID: r.id,
    HERALD_JOB_ID: r.jobId,
    HERALD_TASK_TYPE: r.taskType,
    HERALD_ATTEMPT: String(ctx.attempt),
    HERALD_FENCING_TOKEN: String(ctx.fencingToken),
    HERALD_SLOT_UNIX_MS: String(r.slotMs),
    HERALD_SCHEDULED_UNIX_MS: String(r.scheduledMs),
    HERALD_MANUAL: r.manual ? '1' : '0',
    HERALD_PAYLOAD: binary ? r.payload.toString('base64') : text,
    HERALD_PAYLOAD_ENCODING: binary ? 'base64' : 'utf8',
  };
}

export function execHandler(command: string, write: LineWriter, json: boolean): Handler {
  return (ctx) =>
    new Promise((resolve, reject) => {
      const started = Date.now();
      write(json ? runLineJson(ctx, 'run') : describeRun(ctx));
      const child = spawn('/bin/sh', ['-c', command], {
        env: { ...process.env, ...runEnv(ctx) },
        stdio: ['ignore', 'pipe', 'pipe'],
        // Own process group: the abort path can kill the command's children too, and a Ctrl-C
        // in the worker's terminal reaches the worker (which drains) rather than the commands.
        detached: true,
      });
      const chunks: Buffer[] = [];
      let kept = 0;
      let lastErrLine = '';
      child.stdout.on('data', (d: Buffer) => {
        // With --json, stdout carries only JSON lines; the command's own output goes to stderr.
        (json ? process.stderr : process.stdout).write(d);
        if (kept < MAX_OUTPUT_BYTES) {
          chunks.push(d.subarray(0, MAX_OUTPUT_BYTES - kept));
          kept += Math.min(d.length, MAX_OUTPUT_BYTES - kept);
        }
      });
      child.stderr.on('data', (d: Buffer) => {
        process.stderr.write(d);
        const lines = d.toString('utf8').split('\n').filter((l) => l.trim() !== '');
        if (lines.length > 0) lastErrLine = lines[lines.length - 1]!.slice(0, 500);
      });
      let killTimer: NodeJS.Timeout | undefined;
      const killGroup = (sig: NodeJS.Signals) => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, sig);
        } catch {
          // already gone
        }
      };
      const onAbort = () => {
        killGroup('SIGTERM');
        killTimer = setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      child.once('error', (e) => {
        ctx.signal.removeEventListener('abort', onAbort);
        reject(new HandlerError(`cannot run command: ${e.message}`, { type: 'ExecError', retryable: true }));
      });
      child.once('close', (code, signal) => {
        clearTimeout(killTimer);
        ctx.signal.removeEventListener('abort', onAbort);
        const ms = Date.now() - started;
        const output = Buffer.concat(chunks);
        if (code === 0) {
          write(json ? runLineJson(ctx, 'succeeded', { durationMs: ms }) : `run ${ctx.run.id} attempt ${ctx.attempt}: command succeeded in ${ms}ms`);
          resolve(output);
          return;
        }
        const how = code !== null ? `exited with code ${code}` : `was killed by ${signal}`;
        write(json ? runLineJson(ctx, 'failed', { durationMs: ms, exitCode: code, signal }) : `run ${ctx.run.id} attempt ${ctx.attempt}: command ${how} after ${ms}ms`);
        reject(new HandlerError(`command ${how}${lastErrLine ? `: ${lastErrLine}` : ''}`, { type: 'CommandFailed', retryable: true }));
      });
    });
}
