// Writes a list of LevelDB operations as one atomic batch through a chained batch.
//
// abstract-level's array form, db.batch(ops), clones every operation ({ ...options, ...op }),
// looks up its encodings and validates it on the main thread before the native call, several
// times what the same operations cost put into a chained batch (bench/README.md). The log writes
// every entry and the state machines write several keys per
// command on every node, so this is most of a write's main-thread cost. Same atomicity, same
// durability: one leveldb::WriteBatch, synced when asked.

export type LevelBatchOp<K, V> = { type: 'put'; key: K; value: V } | { type: 'del'; key: K };

export interface ChainedBatchDb<K, V> {
  batch(): { put(key: K, value: V): unknown; del(key: K): unknown; write(options?: { sync?: boolean }): Promise<void> };
}

export async function writeLevelBatch<K, V>(db: ChainedBatchDb<K, V>, ops: readonly LevelBatchOp<K, V>[], options: { sync?: boolean } = {}): Promise<void> {
  if (ops.length === 0) return;
  const batch = db.batch();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (op.type === 'put') batch.put(op.key, op.value);
    else batch.del(op.key);
  }
  await batch.write(options);
}
