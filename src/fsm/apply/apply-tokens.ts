// Bearer tokens: put (create; the bootstrap admin once per cluster) and delete (revoke). A token
// is one record under k\0t\0<id> plus its name under n\0<name>; the server's authenticator reads
// them on every call (server/auth/), so a revoke applied here refuses the token's next call.
import type { ApplyTxn } from '../store/apply-txn.js';
import type { DeleteTokenCommand, PutTokenCommand } from '../commands/commands.js';
import type { TokenResult } from '../commands/results.js';
import { decodeTokenRecord, encodeTokenRecord, isValidTokenId, MAX_TOKENS, validateTokenRecord } from '../commands/token-record.js';
import { prefixEnd, TOKEN_BOOTSTRAP_KEY, TOKEN_PREFIX, tokenKey, tokenNameKey } from '../store/key-layout.js';
import { isValidId } from '../commands/validation.js';
import { asItemError, itemError } from './item-errors.js';

export async function applyPutToken(txn: ApplyTxn, cmd: PutTokenCommand): Promise<TokenResult> {
  try {
    validateTokenRecord(cmd.token);
  } catch (e) {
    return { type: 'token', error: asItemError(e) };
  }
  const t = cmd.token;
  if (cmd.bootstrap && (await txn.getRaw(TOKEN_BOOTSTRAP_KEY)) !== undefined) {
    return { type: 'token', error: itemError('ALREADY_EXISTS', 'the bootstrap admin token was put already (it is put once per cluster)') };
  }
  if ((await txn.getRaw(tokenNameKey(t.name))) !== undefined) {
    return { type: 'token', error: itemError('ALREADY_EXISTS', `a token named "${t.name}" exists; revoke it first or choose another name`) };
  }
  if ((await txn.getRaw(tokenKey(t.id))) !== undefined) return { type: 'token', error: itemError('ALREADY_EXISTS', `token id ${t.id} is taken`) };
  const keys = await txn.rawKeys(TOKEN_PREFIX, prefixEnd(TOKEN_PREFIX), MAX_TOKENS);
  if (keys.length >= MAX_TOKENS) return { type: 'token', error: itemError('LIMIT_EXCEEDED', `a cluster holds at most ${MAX_TOKENS} tokens; revoke unused ones first`) };
  const token = { ...t, createdUnixMs: cmd.nowMs };
  txn.putRaw(tokenKey(t.id), encodeTokenRecord(token));
  txn.putRaw(tokenNameKey(t.name), new TextEncoder().encode(t.id));
  if (cmd.bootstrap) txn.putRaw(TOKEN_BOOTSTRAP_KEY);
  return { type: 'token', token };
}

export async function applyDeleteToken(txn: ApplyTxn, cmd: DeleteTokenCommand): Promise<TokenResult> {
  const nameOrId = cmd.nameOrId;
  let id: string | undefined;
  if (isValidId(nameOrId)) {
    const byName = await txn.getRaw(tokenNameKey(nameOrId));
    if (byName !== undefined) id = new TextDecoder().decode(byName);
  }
  if (id === undefined && isValidTokenId(nameOrId)) id = nameOrId;
  const bytes = id === undefined ? undefined : await txn.getRaw(tokenKey(id));
  if (bytes === undefined) return { type: 'token', error: itemError('TOKEN_NOT_FOUND', `no token named or with id "${nameOrId.slice(0, 128)}"`) };
  const token = decodeTokenRecord(bytes);
  txn.delRaw(tokenKey(token.id));
  txn.delRaw(tokenNameKey(token.name));
  return { type: 'token', token };
}
