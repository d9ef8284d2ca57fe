// Idempotency keys: a create (or trigger) with a key remembers what it made for 24 hours from the
// command's cluster time, so a client retry after a lost answer gets the first result instead of a
// second job. A create refused because the id was taken remembers that answer too: otherwise an
// earlier attempt still in flight could apply after the retry was told ALREADY_EXISTS (and after
// the job was deleted) and create the job the client was told was not created (chaos seed 311).
// Likewise a keyed trigger refused with JOB_NOT_FOUND.
// Expired keys read as absent at once and are removed by trimHistory in bounded steps.
import { NOT_READ, type ApplyTxn, type NotRead } from '../store/apply-txn.js';
import { ByteReader, ByteWriter } from '../commands/binary-codec.js';
import { expiryKey } from '../store/key-layout.js';
import type { ErrorCode } from '../../herald-error.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface IdemRecord {
  /** What the first applied request made ('' when it was refused). */
  readonly target: string;
  readonly expiresMs: number;
  /** The refusal the first applied request got (trailing fields; absent in older records). */
  readonly error?: { readonly code: ErrorCode; readonly message: string };
}

export function decodeIdem(v: Uint8Array): IdemRecord {
  const r = new ByteReader(v);
  const target = r.str();
  const expiresMs = r.int();
  if (!r.more) return { target, expiresMs };
  return { target, expiresMs, error: { code: r.str() as ErrorCode, message: r.str() } };
}

/** The live record under `recordKey`, or undefined when absent or expired at `nowMs`. */
export async function lookupIdem(txn: ApplyTxn, recordKey: string, nowMs: number): Promise<IdemRecord | undefined> {
  return liveIdem(await txn.getRaw(recordKey), nowMs);
}

/** lookupIdem when the transaction has the record (a create batch prefetches its keys); NOT_READ otherwise. */
export function loadedIdem(txn: ApplyTxn, recordKey: string, nowMs: number): IdemRecord | undefined | NotRead {
  const loaded = txn.loadedRaw(recordKey);
  return loaded === NOT_READ ? NOT_READ : liveIdem(loaded, nowMs);
}

function liveIdem(v: Uint8Array | undefined, nowMs: number): IdemRecord | undefined {
  if (v === undefined) return undefined;
  const rec = decodeIdem(v);
  return rec.expiresMs > nowMs ? rec : undefined;
}

export function storeIdem(txn: ApplyTxn, recordKey: string, target: string, nowMs: number, error?: { code: ErrorCode; message: string }): void {
  const expiresMs = nowMs + IDEMPOTENCY_TTL_MS;
  const w = new ByteWriter(64, txn.writeBuffers).str(target).int(expiresMs);
  if (error) w.str(error.code).str(error.message);
  txn.putRaw(recordKey, w.finish());
  txn.putRaw(expiryKey(expiresMs, recordKey));
}
