// Bringing a state machine's store up: open LevelDB, finish or undo what a crash interrupted,
// upgrade an older schema, and rebuild the in-memory state that mirrors the store (run counts and
// the ready index). Also used by restore, which rebuilds the same state from a new store.
import { ClassicLevel } from 'classic-level';
import { RunState } from '../../gen/herald/v1/run.js';
import { HeraldError } from '../../herald-error.js';
import type { Db } from '../store/apply-txn.js';
import { decodeCount } from '../store/index-key-writes.js';
import {
  COUNTER_PREFIX,
  DROPPED_INDEX_PREFIXES,
  META_APPLIED,
  META_COMMAND_TIME,
  META_RESTORING,
  META_SCHEMA,
  prefixEnd,
  READABLE_SCHEMAS,
  runKeyOfStateKey,
  SCHEMA_VERSION,
  statePrefix,
  TRIM_INDEX_SCHEMA,
} from '../store/key-layout.js';
import { deriveRetentionIndex } from './retention-upgrade.js';
import { decodeRunRecord, readyEntryOf } from '../store/records.js';
import type { ReadyIndex } from '../store/ready-index.js';
import { scanKeys } from '../store/key-scan.js';

/**
 * LevelDB's default 4 MiB memtable flushed every second under bulk creates, and the compactions
 * that followed grew with the store, slowing creates as it grew; 16 MiB keeps them steady for a
 * little more memory per node.
 */
export const DEFAULT_WRITE_BUFFER_BYTES = 16 * 1024 * 1024;

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Opens the store at `dir` ready for apply: a half-done restore is emptied, a new store gets its
 * schema, an older readable schema is upgraded. Returns the store and its applied index; the
 * store is closed again if anything fails.
 */
export async function openStore(dir: string, writeBufferBytes = DEFAULT_WRITE_BUFFER_BYTES): Promise<{ db: Db; applied: number }> {
  const db: Db = new ClassicLevel<string, Uint8Array>(dir, {
    keyEncoding: 'utf8',
    valueEncoding: 'view',
    writeBufferSize: writeBufferBytes,
  });
  await db.open();
  try {
    return await prepareStore(db, dir);
  } catch (e) {
    await db.close();
    throw e;
  }
}

/**
 * Readies an open store for apply (`where` names it in errors): a half-done restore is emptied, a
 * new store gets its schema, an older readable schema is upgraded. Returns its applied index.
 */
export async function prepareStore(db: Db, where: string): Promise<{ db: Db; applied: number }> {
  {
    if ((await db.get(META_RESTORING)) !== undefined) {
      // A restore was cut short: the contents are a mix of old and new. Start empty so the
      // runtime installs a snapshot again rather than serving a broken state.
      await clearAllButMarker(db);
      await db.del(META_RESTORING, { sync: true });
    }
    await upgradeSchema(db, where);
    return { db, applied: await readAppliedIndex(db) };
  }
}

/** The applied index the store holds (written in the same batch as each apply's changes). */
export async function readAppliedIndex(db: Db): Promise<number> {
  const v = await db.get(META_APPLIED);
  return v === undefined ? 0 : Number(dec.decode(v));
}

/** The highest command time the store has applied (META_COMMAND_TIME; 0 when never written). */
export async function readCommandTime(db: Db): Promise<number> {
  return decodeCommandTime(await db.get(META_COMMAND_TIME));
}

export function decodeCommandTime(v: Uint8Array | undefined): number {
  if (v === undefined) return 0;
  const n = Number(dec.decode(v));
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** True while a restore is cut short (the store mixes two states until it is opened again). */
export async function restoreInterrupted(db: Db): Promise<boolean> {
  return (await db.get(META_RESTORING)) !== undefined;
}

async function upgradeSchema(db: Db, dir: string): Promise<void> {
  const stored = await db.get(META_SCHEMA);
  const schema = stored === undefined ? undefined : Number(dec.decode(stored));
  if (schema === undefined) {
    await db.batch([
      { type: 'put', key: META_SCHEMA, value: enc.encode(String(SCHEMA_VERSION)) },
      { type: 'put', key: META_APPLIED, value: enc.encode('0') },
    ], { sync: true });
  } else if (schema === SCHEMA_VERSION) {
    // Current: nothing to do.
  } else if (READABLE_SCHEMAS.includes(schema)) {
    // Schemas 2 and 3 only dropped derived indexes: deleting them is their upgrade, and every
    // replica does the same.
    for (const p of DROPPED_INDEX_PREFIXES) await db.clear({ gte: p, lt: prefixEnd(p) });
    // Schema 4 added retention state: derived from the runs stored (retention-upgrade.ts).
    if (schema < TRIM_INDEX_SCHEMA) await deriveRetentionIndex(db);
    await db.put(META_SCHEMA, enc.encode(String(SCHEMA_VERSION)), { sync: true });
  } else {
    throw new HeraldError('CORRUPT_STORAGE', `state machine schema ${dec.decode(stored!)} in ${dir}; this build reads ${SCHEMA_VERSION}`);
  }
}

/** Deletes every key except the restore marker (LevelDB's clear is not atomic). */
export async function clearAllButMarker(db: Db): Promise<void> {
  await db.clear({ lt: META_RESTORING });
  await db.clear({ gt: META_RESTORING });
}

/** Replaces `counts` with the stored per-state run counts (c\0 keys). */
export async function loadCounts(db: Db, counts: Map<number, number>): Promise<void> {
  counts.clear();
  for await (const [key, value] of db.iterator({ gte: COUNTER_PREFIX, lt: prefixEnd(COUNTER_PREFIX) })) {
    counts.set(Number(key.slice(COUNTER_PREFIX.length)), decodeCount(value));
  }
}

/**
 * Refills the in-memory ready index from the store: the dispatchable runs among the PENDING and
 * FAILED ones (their s\0 ranges), read in pages. Costs a read per waiting run, at open and
 * restore (and after a failed batch write) only.
 */
export async function rebuildReadyIndex(db: Db, ready: ReadyIndex): Promise<void> {
  ready.clear();
  for (const state of [RunState.RUN_STATE_PENDING, RunState.RUN_STATE_FAILED]) {
    const prefix = statePrefix(state);
    const it = scanKeys(db, { gte: prefix, lt: prefixEnd(prefix) });
    try {
      for (;;) {
        const keys = await it.nextv(1000);
        if (keys.length === 0) break;
        const values = await db.getMany(keys.map(runKeyOfStateKey));
        for (const v of values) {
          const e = v === undefined ? undefined : readyEntryOf(decodeRunRecord(v));
          if (e) ready.add(e);
        }
      }
    } finally {
      await it.close();
    }
  }
}
