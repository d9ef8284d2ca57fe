// Bearer tokens in the state machine: putToken / deleteToken (tags 22, 23; result tag 15), keys
// k\0 and n\0, the bootstrap put applied once per cluster, validation by apply, and the codecs.
// The record holds a salted hash, never a secret.
import { afterEach, describe, expect, it } from 'vitest';
import { Role } from '../../src/gen/herald/v1/auth_service.js';
import { decodeCommand, decodeResult, encodeCommand, encodeResult, type TokenRecord } from '../../src/fsm/index.js';
import { newTokenSecret, secretMatches } from '../../src/server/auth/token-secret.js';
import { openTestFsm, T0, type TestFsm } from './fsm-test-kit.js';

let t: TestFsm;
afterEach(async () => t?.close());

function record(name: string, role = Role.ROLE_OPERATOR, taskTypes: string[] = []): { rec: TokenRecord; token: string } {
  const s = newTokenSecret();
  return { rec: { id: s.id, name, role, taskTypes, salt: Uint8Array.from(s.salt), hash: Uint8Array.from(s.hash), createdUnixMs: 0, createdBy: 'tester' }, token: s.token };
}

describe('tokens in the state machine', () => {
  it('put stores the salted hash stamped with the command time; names are unique; delete by name or id removes it', async () => {
    t = await openTestFsm();
    const a = record('deploy-bot');
    const r = await t.one({ type: 'putToken', nowMs: T0, token: a.rec, bootstrap: false }, 'token');
    expect(r.error).toBeUndefined();
    expect(r.token).toMatchObject({ id: a.rec.id, name: 'deploy-bot', role: Role.ROLE_OPERATOR, createdUnixMs: T0, createdBy: 'tester' });
    const stored = (await t.fsm.getToken(a.rec.id))!;
    expect(secretMatches(stored, a.token.split('.')[2]!)).toBe(true);
    expect(secretMatches(stored, 'x'.repeat(43))).toBe(false);
    // Neither the command (the Raft log) nor the record holds the secret.
    expect(Buffer.from(encodeCommand({ type: 'putToken', nowMs: T0, token: a.rec, bootstrap: false })).includes(Buffer.from(a.token.split('.')[2]!))).toBe(false);

    const dup = await t.one({ type: 'putToken', nowMs: T0, token: record('deploy-bot').rec, bootstrap: false }, 'token');
    expect(dup.error?.code).toBe('ALREADY_EXISTS');
    const w = record('billing', Role.ROLE_WORKER, ['email', 'report']);
    await t.one({ type: 'putToken', nowMs: T0 + 1, token: w.rec, bootstrap: false }, 'token');
    expect((await t.fsm.listTokens()).map((x) => x.name).sort()).toEqual(['billing', 'deploy-bot']);

    expect((await t.one({ type: 'deleteToken', nowMs: T0 + 2, nameOrId: 'deploy-bot' }, 'token')).token?.id).toBe(a.rec.id);
    expect(await t.fsm.getToken(a.rec.id)).toBeUndefined();
    expect((await t.one({ type: 'deleteToken', nowMs: T0 + 3, nameOrId: w.rec.id }, 'token')).token?.name).toBe('billing');
    expect((await t.one({ type: 'deleteToken', nowMs: T0 + 4, nameOrId: 'billing' }, 'token')).error?.code).toBe('TOKEN_NOT_FOUND');
    expect(await t.fsm.listTokens()).toEqual([]);
    // The name is free again.
    expect((await t.one({ type: 'putToken', nowMs: T0 + 5, token: record('deploy-bot').rec, bootstrap: false }, 'token')).error).toBeUndefined();
  });

  it('applies a bootstrap put once per cluster, even after that token is revoked', async () => {
    t = await openTestFsm();
    const b = record('bootstrap-admin', Role.ROLE_ADMIN);
    expect((await t.one({ type: 'putToken', nowMs: T0, token: b.rec, bootstrap: true }, 'token')).error).toBeUndefined();
    await t.one({ type: 'deleteToken', nowMs: T0 + 1, nameOrId: 'bootstrap-admin' }, 'token');
    const again = await t.one({ type: 'putToken', nowMs: T0 + 2, token: record('bootstrap-admin', Role.ROLE_ADMIN).rec, bootstrap: true }, 'token');
    expect(again.error?.code).toBe('ALREADY_EXISTS');
    expect(await t.fsm.listTokens()).toEqual([]);
  });

  it('refuses bad records naming the field, and changes nothing', async () => {
    t = await openTestFsm();
    const bad: [Partial<TokenRecord>, string][] = [
      [{ name: 'has space' }, 'name'],
      [{ role: Role.ROLE_UNSPECIFIED }, 'role'],
      [{ role: Role.ROLE_WORKER, taskTypes: [] }, 'task_types'],
      [{ role: Role.ROLE_OPERATOR, taskTypes: ['report'] }, 'task_types'],
      [{ id: 'X!' }, 'id'],
      [{ hash: new Uint8Array(3) }, 'hash'],
    ];
    for (const [p, field] of bad) {
      const r = await t.one({ type: 'putToken', nowMs: T0, token: { ...record('n').rec, ...p }, bootstrap: false }, 'token');
      expect(r.error?.code, field).toBe('INVALID_ARGUMENT');
      expect(r.error?.reason, JSON.stringify(p)).toBe(field);
    }
    expect(await t.fsm.listTokens()).toEqual([]);
  });

  it('round-trips the commands and the result through their codecs', () => {
    const { rec } = record('w', Role.ROLE_WORKER, ['a', 'b']);
    for (const cmd of [
      { type: 'putToken' as const, nowMs: T0, token: rec, bootstrap: true },
      { type: 'deleteToken' as const, nowMs: T0, nameOrId: 'w' },
    ]) {
      expect(decodeCommand(encodeCommand(cmd))).toEqual(cmd);
    }
    const res = { type: 'token' as const, token: rec };
    expect(decodeResult(encodeResult(res))).toEqual(res);
  });
});
