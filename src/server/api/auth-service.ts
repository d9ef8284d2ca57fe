// herald.v1.AuthService: bearer tokens, replicated in the state machine as salted hashes
// (putToken / deleteToken). The secret is drawn here, before proposing (apply draws no
// randomness), returned once in CreateToken's response and never stored or logged. Writes run on
// the leader (a follower forwards the call, leader-route.ts); ListTokens on any node after a
// read barrier. Also puts the bootstrap admin token once per cluster (bootstrapAdmin).
import { stampedAtAppend } from '../node/stamped-proposal.js';
import type { Logger } from 'pino';
import { AuthServiceClient, Role, type AuthServiceServer, type TokenInfo } from '../../gen/herald/v1/auth_service.js';
import { decodeResult, validateTokenGrant, type FsmCommand, type SchedulerStateMachine, type TokenRecord } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import type { HeraldNode } from '../node/herald-node.js';
import type { NodeMetrics } from '../node/metrics.js';
import { unary, type CallContext } from './unary-handler.js';
import { expectType, itemError } from './fsm-result.js';
import { newTokenSecret, type NewTokenSecret } from '../auth/token-secret.js';
import { LeaderRoute, notLeaderError, type LeaderRouteNode } from './leader-route.js';

export interface AuthServiceContext {
  node: Pick<HeraldNode, 'propose' | 'readIndex'> & LeaderRouteNode;
  fsm: Pick<SchedulerStateMachine, 'listTokens'>;
  logger: Logger;
  audit?: Logger;
  metrics?: NodeMetrics;
  proposalTimeoutMs: number;
}

export const BOOTSTRAP_TOKEN_NAME = 'bootstrap-admin';

export function tokenInfo(t: TokenRecord): TokenInfo {
  return { id: t.id, name: t.name, role: t.role, taskTypes: [...t.taskTypes], createdUnixMs: t.createdUnixMs, createdBy: t.createdBy };
}

export interface AuthServiceHandle {
  implementation: AuthServiceServer;
  close(): void;
}

export function createAuthService(ctx: AuthServiceContext): AuthServiceHandle {
  const route = new LeaderRoute(ctx.node, AuthServiceClient);
  const deps = { logger: ctx.logger, metrics: ctx.metrics, audit: ctx.audit };

  function timeoutFor(call: CallContext): number {
    const left = call.remainingMs() - 50;
    if (left <= 0) throw new HeraldError('PROPOSAL_TIMEOUT', 'the call deadline passed before the write could be proposed');
    return Math.min(ctx.proposalTimeoutMs, left);
  }

  const implementation: AuthServiceServer = {
    createToken: unary('CreateToken', deps, async (req, call) => {
      validateTokenGrant(req);
      const timeoutMs = timeoutFor(call);
      return route.onLeader('createToken', req, call, timeoutMs, async (nowMs) => {
        const secret = newTokenSecret();
        const r = await proposeOnLeader(ctx, timeoutMs, {
          type: 'putToken',
          nowMs,
          bootstrap: false,
          token: record(secret, req.name, req.role, req.role === Role.ROLE_WORKER ? [...new Set(req.taskTypes)].sort() : [], call.principal.name),
        });
        return { token: tokenInfo(r), secret: secret.token };
      });
    }),
    listTokens: unary('ListTokens', deps, async (_req, call) => {
      await ctx.node.readIndex({ timeoutMs: timeoutFor(call) });
      const tokens = await ctx.fsm.listTokens();
      return { tokens: tokens.map(tokenInfo).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
    }),
    revokeToken: unary('RevokeToken', deps, async (req, call) => {
      if (req.nameOrId === '' || req.nameOrId.length > 128) throw new HeraldError('INVALID_ARGUMENT', 'name_or_id: a token name or id is required', { field: 'name_or_id' });
      const timeoutMs = timeoutFor(call);
      return route.onLeader('revokeToken', req, call, timeoutMs, async (nowMs) => {
        const r = await proposeOnLeader(ctx, timeoutMs, { type: 'deleteToken', nowMs, nameOrId: req.nameOrId });
        return { token: tokenInfo(r) };
      });
    }),
    whoAmI: unary('WhoAmI', deps, async (_req, call) => {
      const p = call.principal;
      return { name: p.name, role: p.role, taskTypes: [...p.taskTypes].sort(), authEnabled: p.via !== 'none' };
    }),
  };
  return { implementation, close: () => route.close() };
}

function record(s: NewTokenSecret, name: string, role: Role, taskTypes: string[], createdBy: string): TokenRecord {
  return { id: s.id, name, role, taskTypes, salt: s.salt, hash: s.hash, createdUnixMs: 0, createdBy };
}

async function proposeOnLeader(ctx: Pick<AuthServiceContext, 'node'>, timeoutMs: number, command: FsmCommand): Promise<TokenRecord> {
  const out = await ctx.node.propose(stampedAtAppend(command, ctx.node.clusterClock), { forward: false, timeoutMs });
  const res = decodeResult(out.result);
  if (res.type === 'rejected') throw itemError(res.error);
  const r = expectType(res, 'token');
  if (r.error) throw itemError(r.error);
  if (!r.token) throw new HeraldError('INTERNAL', 'token result without a token');
  return r.token;
}

/**
 * Puts the bootstrap admin token (from `herald server --auth-bootstrap-file`) on the leader,
 * once per cluster: apply refuses a second bootstrap put (ALREADY_EXISTS), so a node restarted
 * with the file, or another node given it, changes nothing — and a revoked bootstrap token stays
 * revoked.
 */
export async function putBootstrapToken(ctx: Pick<AuthServiceContext, 'node'>, secret: NewTokenSecret, timeoutMs: number): Promise<'put' | 'present'> {
  try {
    if (!ctx.node.driver.isLeader()) throw notLeaderError(ctx.node.leader());
    const nowMs = ctx.node.clusterClock.nowMs();
    if (nowMs === undefined) throw new HeraldError('NOT_READY', 'the leader has not established cluster time yet; retry shortly');
    await proposeOnLeader(ctx, timeoutMs, { type: 'putToken', nowMs, bootstrap: true, token: record(secret, BOOTSTRAP_TOKEN_NAME, Role.ROLE_ADMIN, [], 'bootstrap') });
    return 'put';
  } catch (e) {
    if (e instanceof HeraldError && e.code === 'ALREADY_EXISTS') return 'present';
    throw e;
  }
}
