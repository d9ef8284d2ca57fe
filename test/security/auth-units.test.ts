// Units of the auth layer: the per-principal rate limit (fake clock), the fresh-state barrier
// (calls share read barriers but never one that began before they arrived), the audit line and
// the token string.
import { describe, expect, it } from 'vitest';
import type { Logger } from 'pino';
import { PrincipalRateLimit } from '../../src/server/auth/principal-rate-limit.js';
import { FreshStateBarrier } from '../../src/server/auth/fresh-state-barrier.js';
import { auditLine, isMutating } from '../../src/server/auth/audit-line.js';
import { newTokenSecret, parseToken, secretMatches, tokenFromString } from '../../src/server/auth/token-secret.js';
import { Role } from '../../src/gen/herald/v1/auth_service.js';
import { isHeraldError } from '../../src/herald-error.js';
import { recordedName, UNAUTHENTICATED_ADMIN } from '../../src/server/auth/principal.js';

describe('per-principal rate limit', () => {
  it('allows the burst, then refuses with the wait, and refills with time; principals are separate', () => {
    let now = 1_000;
    const limit = new PrincipalRateLimit(10, 20, { nowMs: () => now });
    for (let i = 0; i < 20; i++) limit.take('a');
    let refused: unknown;
    try {
      limit.take('a');
    } catch (e) {
      refused = e;
    }
    expect(isHeraldError(refused, 'LIMIT_EXCEEDED')).toBe(true);
    expect((refused as Error).message).toMatch(/over its rate limit of 10 calls\/s; retry in 100 ms/);
    limit.take('b');
    now += 100;
    limit.take('a');
    expect(() => limit.take('a')).toThrow(/retry in/);
  });
});

describe('fresh-state barrier', () => {
  it('shares a running barrier only with the calls that arrive after it starts waiting for the next', async () => {
    const started: Array<() => void> = [];
    const b = new FreshStateBarrier(() => new Promise<void>((r) => started.push(r)));
    const first = b.wait();
    const second = b.wait(); // arrived while the first barrier runs: needs the next one
    const third = b.wait(); // shares the second's
    expect(started).toHaveLength(1);
    let secondDone = false;
    void second.then(() => (secondDone = true));
    started[0]!();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(secondDone).toBe(false);
    expect(started).toHaveLength(2);
    started[1]!();
    await Promise.all([second, third]);
    expect(started).toHaveLength(2);
  });
});

describe('audit line', () => {
  it('logs mutations with principal, ids, request id and outcome; not reads, not calls sent on to the leader', () => {
    const lines: unknown[] = [];
    const audit = { info: (o: unknown) => lines.push(o) } as unknown as Logger;
    const p = { name: 'ops', role: Role.ROLE_OPERATOR, taskTypes: new Set<string>(), via: 'token' as const };
    auditLine(audit, 'PauseJob', { requestId: 'r1', principal: p, sentToLeader: false }, { jobId: 'j1', note: 'secret note' }, 'OK');
    auditLine(audit, 'GetJob', { requestId: 'r2', principal: p, sentToLeader: false }, { jobId: 'j1' }, 'OK');
    auditLine(audit, 'DeleteJob', { requestId: 'r3', principal: p, sentToLeader: true }, { jobId: 'j1' }, 'OK');
    auditLine(audit, 'CreateToken', { requestId: 'r4', principal: p, sentToLeader: false }, { name: 'bot', role: 2 }, 'PERMISSION_DENIED');
    expect(lines).toEqual([
      { audit: true, principal: 'ops', role: Role.ROLE_OPERATOR, via: 'token', method: 'PauseJob', jobId: 'j1', requestId: 'r1', outcome: 'OK' },
      { audit: true, principal: 'ops', role: Role.ROLE_OPERATOR, via: 'token', method: 'CreateToken', name: 'bot', requestId: 'r4', outcome: 'PERMISSION_DENIED' },
    ]);
    expect(['CreateJob', 'UpdateJob', 'RetryRuns', 'SetTaskType', 'RevokeToken', 'TransferLeadership'].every(isMutating)).toBe(true);
    expect(['ListJobs', 'GetRun', 'ListTokens', 'WatchRuns', 'Connect', 'ValidateJob'].some(isMutating)).toBe(false);
  });
});

describe('recorded name', () => {
  it('records the principal\'s name on jobs, nobody while auth is off', () => {
    expect(recordedName(UNAUTHENTICATED_ADMIN)).toBe('');
    expect(recordedName({ name: 'ops', role: Role.ROLE_OPERATOR, taskTypes: new Set(), via: 'token' })).toBe('ops');
    expect(recordedName({ name: 'cn-deploy', role: Role.ROLE_OPERATOR, taskTypes: new Set(), via: 'forwarded' })).toBe('cn-deploy');
  });
});

describe('token string', () => {
  it('parses only hrd.<id>.<secret>; the stored hash matches only the secret', () => {
    const t = newTokenSecret();
    const p = parseToken(t.token)!;
    expect(p.id).toBe(t.id);
    expect(secretMatches(t, p.secret)).toBe(true);
    expect(secretMatches(t, p.secret.slice(0, -1) + (p.secret.endsWith('A') ? 'B' : 'A'))).toBe(false);
    for (const bad of ['', 'hrd', `hrd.${t.id}`, `xyz.${t.id}.${p.secret}`, `hrd.${t.id}.${p.secret}x`, `hrd.ID!.${p.secret}`]) expect(parseToken(bad), bad).toBeUndefined();
    const again = tokenFromString(t.token)!;
    expect(again.id).toBe(t.id);
    expect(Buffer.from(again.salt).equals(Buffer.from(t.salt))).toBe(false); // a fresh salt
    expect(secretMatches(again, p.secret)).toBe(true);
  });
});
