// Idempotency keys: a create (or trigger) with a key remembers what it made for 24 hours from the
// command's cluster time, so a client retry after a lost answer gets the first result instead of a
// second job. Expired keys read as absent at once and are removed by trimHistory in bounded steps.
import type { ApplyTxn } from './apply-txn.js';
import { ByteReader, ByteWriter } from './binary-codec.js';
import { expiryKey } from './key-layout.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface IdemRecord {
  readonly target: string;
  readonly expiresMs: number;
}

export function decodeIdem(v: Uint8Array): IdemRecord {
  const r = new ByteReader(v);
  return { target: r.str(), expiresMs: r.int() };
}

/** The live record under `recordKey`, or undefined when absent or expired at `nowMs`. */
export async function lookupIdem(txn: ApplyTxn, recordKey: string, nowMs: number): Promise<IdemRecord | undefined> {
  const v = await txn.getRaw(recordKey);
  if (v === undefined) return undefined;
  const rec = decodeIdem(v);
  return rec.expiresMs > nowMs ? rec : undefined;
}

export function storeIdem(txn: ApplyTxn, recordKey: string, target: string, nowMs: number): void {
  const expiresMs = nowMs + IDEMPOTENCY_TTL_MS;
  txn.putRaw(recordKey, new ByteWriter(64).str(target).int(expiresMs).finish());
  txn.putRaw(expiryKey(expiresMs, recordKey));
}
