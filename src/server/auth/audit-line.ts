// The audit trail: one structured log line per mutating call this node carried out (a follower
// that sent the call on to the leader leaves the line to the leader) — who (principal), what
// (method, the job / run / token ids of the request), when (the log line's time), the request id
// and the outcome (OK or the Herald error code). Reads write nothing. The audit logger is the
// node's logger with `audit: true`, so the lines can be routed on their own.
import type { Logger } from 'pino';
import { METHOD_ROLES } from './method-roles.js';
import type { Principal } from './principal.js';
import { Role } from '../../gen/herald/v1/auth_service.js';

/** Short method names (as unary-handler.ts knows them) of the calls that change state. */
const MUTATING: ReadonlySet<string> = new Set(
  Object.entries(METHOD_ROLES)
    .filter(([m, roles]) => !roles.includes(Role.ROLE_VIEWER) && !m.includes('Reflection') && !m.endsWith('/ValidateJob') && !m.endsWith('/ListTokens') && !m.endsWith('/Connect'))
    .map(([m]) => m.slice(m.lastIndexOf('/') + 1)),
);

export function isMutating(method: string): boolean {
  return MUTATING.has(method);
}

interface AuditedCall {
  requestId: string;
  principal: Principal;
  sentToLeader: boolean;
}

export function auditLine(audit: Logger | undefined, method: string, call: AuditedCall, request: unknown, outcome: string): void {
  if (!audit || call.sentToLeader || !MUTATING.has(method) || outcome === 'NOT_LEADER' || outcome === 'NO_LEADER') return;
  audit.info({ audit: true, principal: call.principal.name, role: call.principal.role, via: call.principal.via, method, ...idsOf(request), requestId: call.requestId, outcome }, 'audit');
}

/** The ids a request names (never payloads or secrets). */
function idsOf(request: unknown): Record<string, unknown> {
  if (typeof request !== 'object' || request === null) return {};
  const r = request as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of ['jobId', 'runId', 'name', 'nameOrId', 'targetId'] as const) if (typeof r[k] === 'string' && r[k] !== '') out[k] = r[k];
  if (Array.isArray(r.runIds) && r.runIds.length > 0) out.runIds = r.runIds.slice(0, 100);
  if (Array.isArray(r.items)) out.items = r.items.length;
  const cfg = r.config as { taskType?: unknown } | undefined;
  if (typeof cfg?.taskType === 'string') out.taskType = cfg.taskType;
  if (typeof r.taskType === 'string' && r.taskType !== '') out.taskType = r.taskType;
  return out;
}
