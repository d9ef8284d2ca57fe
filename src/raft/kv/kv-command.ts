// Commands and results of the KV test machine, encoded compactly (binary, no JSON) so benches
// measure Raft rather than serialization.
//
// Command: [op u8][u16 keyLen][key][op-specific]
//   put:    [value...]
//   delete: -
//   get:    -          (a read through the log: linearizable, for tests)
//   cas:    [u8 hasExpected][u32 expLen][expected][value...]
// Result:   [status u8][value...]   status: 1 ok, 0 not found / compare failed

export type KvCommand =
  | { op: 'put'; key: string; value: Uint8Array }
  | { op: 'delete'; key: string }
  | { op: 'get'; key: string }
  | { op: 'cas'; key: string; expected: Uint8Array | null; value: Uint8Array };

export interface KvResult {
  ok: boolean;
  /** get: the value; cas failure: the current value; put: the previous value. */
  value: Uint8Array | null;
}

const OPS = { put: 1, delete: 2, get: 3, cas: 4 } as const;

export function encodeKvCommand(c: KvCommand): Uint8Array {
  const key = Buffer.from(c.key, 'utf8');
  const head = Buffer.allocUnsafe(3 + key.length);
  head.writeUInt8(OPS[c.op], 0);
  head.writeUInt16BE(key.length, 1);
  key.copy(head, 3);
  switch (c.op) {
    case 'put':
      return Buffer.concat([head, c.value]);
    case 'delete':
    case 'get':
      return head;
    case 'cas': {
      const exp = c.expected ?? new Uint8Array(0);
      const h = Buffer.allocUnsafe(5);
      h.writeUInt8(c.expected ? 1 : 0, 0);
      h.writeUInt32BE(exp.length, 1);
      return Buffer.concat([head, h, exp, c.value]);
    }
  }
}

export function decodeKvCommand(data: Uint8Array): KvCommand {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (b.length < 3) throw new Error('kv command too short');
  const op = b.readUInt8(0);
  const kl = b.readUInt16BE(1);
  if (b.length < 3 + kl) throw new Error('kv command key truncated');
  const key = b.toString('utf8', 3, 3 + kl);
  const rest = b.subarray(3 + kl);
  switch (op) {
    case OPS.put:
      return { op: 'put', key, value: rest };
    case OPS.delete:
      return { op: 'delete', key };
    case OPS.get:
      return { op: 'get', key };
    case OPS.cas: {
      if (rest.length < 5) throw new Error('kv cas truncated');
      const has = rest.readUInt8(0) === 1;
      const el = rest.readUInt32BE(1);
      if (rest.length < 5 + el) throw new Error('kv cas expected value truncated');
      return { op: 'cas', key, expected: has ? rest.subarray(5, 5 + el) : null, value: rest.subarray(5 + el) };
    }
    default:
      throw new Error(`unknown kv op ${op}`);
  }
}

export function encodeKvResult(r: KvResult): Uint8Array {
  const v = r.value ?? new Uint8Array(0);
  const b = Buffer.allocUnsafe(2 + v.length);
  b.writeUInt8(r.ok ? 1 : 0, 0);
  b.writeUInt8(r.value ? 1 : 0, 1);
  b.set(v, 2);
  return b;
}

export function decodeKvResult(data: Uint8Array): KvResult {
  if (data.length < 2) throw new Error('kv result too short');
  return { ok: data[0] === 1, value: data[1] === 1 ? data.subarray(2) : null };
}
