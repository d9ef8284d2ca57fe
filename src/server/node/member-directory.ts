// Who the members are and where to reach them, for a running node: the configuration in force
// (the latest in the log, which records the addresses of members added at runtime), falling back
// to the command line's --peers for bootstrap members it lists without addresses, and for a
// joining node that knows no configuration yet.
import { addressesOf, membersOf } from '../../raft/core/membership.js';
import type { PeerInfo } from '../../raft/ports.js';
import type { ConfState } from '../../raft/types.js';

export function membersInForce(conf: ConfState, flags: readonly PeerInfo[]): PeerInfo[] {
  const ids = membersOf(conf);
  if (ids.length === 0) return [...flags];
  const book = addressesOf(conf);
  return ids.map((id) => {
    const a = book[id];
    const f = flags.find((m) => m.id === id);
    return { id, peerAddress: a?.peer || f?.peerAddress || '', clientAddress: a?.client || f?.clientAddress || '' };
  });
}
