// The commands of the simulator's small key-value state machine, as Raft entry data. A compact
// text form ("p|<op id>|<key>|<value>") keeps encoding cheap: the simulator applies hundreds of
// thousands of these per run.

export interface PutCommand {
  opId: number;
  key: string;
  value: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodePut(cmd: PutCommand): Uint8Array {
  return enc.encode(`p|${cmd.opId}|${cmd.key}|${cmd.value}`);
}

export function decodePut(data: Uint8Array): PutCommand {
  const [tag, opId, key, value] = dec.decode(data).split('|');
  if (tag !== 'p' || opId === undefined || key === undefined || value === undefined) {
    throw new Error(`not a put command: ${dec.decode(data)}`);
  }
  return { opId: Number(opId), key, value };
}

/** The state machine: key -> value. Immutable snapshots of it travel with 'snap' messages. */
export type KvState = Map<string, string>;

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
