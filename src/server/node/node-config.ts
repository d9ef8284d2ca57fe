// Parsing of `herald server` member lists.
//
// --peers lists every member's peer (Raft) address, optionally with its client address:
//   n1=127.0.0.1:7101,n2=127.0.0.1:7102            (peer addresses only)
//   n1=127.0.0.1:7101/127.0.0.1:7201,...            (peer/client)
// --client-peers n1=127.0.0.1:7201,... gives client addresses separately (either form works;
// client addresses let followers tell clients where the leader is).

import { createHash } from 'node:crypto';
import { HeraldError } from '../../herald-error.js';
import type { PeerInfo } from '../peer/peer-transport.js';

const ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const ADDR_RE = /^[^\s/=,]+:\d{1,5}$/;

function parsePairs(list: string, flag: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const raw of list.split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new HeraldError('INVALID_ARGUMENT', `${flag}: "${item}" is not id=address`);
    const id = item.slice(0, eq);
    if (!ID_RE.test(id)) throw new HeraldError('INVALID_ID', `${flag}: bad node id "${id}" (letters, digits, _ . -; at most 64)`);
    out.push([id, item.slice(eq + 1)]);
  }
  return out;
}

/** A member id as every surface takes it (--peers, `herald cluster add`). */
export function isMemberId(id: string): boolean {
  return ID_RE.test(id);
}

/** host:port as every surface takes it. */
export function isHostPort(a: string): boolean {
  return ADDR_RE.test(a);
}

function checkAddr(a: string, flag: string): string {
  if (!ADDR_RE.test(a)) throw new HeraldError('INVALID_ARGUMENT', `${flag}: "${a}" is not host:port`);
  return a;
}

export function parseMembers(peers: string, clientPeers?: string): PeerInfo[] {
  const members = new Map<string, PeerInfo>();
  for (const [id, addr] of parsePairs(peers, '--peers')) {
    if (members.has(id)) throw new HeraldError('INVALID_ARGUMENT', `--peers: ${id} listed twice`);
    const [peerAddress, clientAddress = ''] = addr.split('/');
    members.set(id, {
      id,
      peerAddress: checkAddr(peerAddress!, '--peers'),
      clientAddress: clientAddress ? checkAddr(clientAddress, '--peers') : '',
    });
  }
  if (clientPeers) {
    for (const [id, addr] of parsePairs(clientPeers, '--client-peers')) {
      const m = members.get(id);
      if (!m) throw new HeraldError('INVALID_ARGUMENT', `--client-peers: ${id} is not in --peers`);
      m.clientAddress = checkAddr(addr, '--client-peers');
    }
  }
  if (members.size === 0) throw new HeraldError('INVALID_ARGUMENT', '--peers: no members');
  return [...members.values()];
}

/** The cluster id written at bootstrap when none is given: a digest of the sorted member list. */
export function deriveClusterId(members: readonly PeerInfo[]): string {
  const text = [...members]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((m) => `${m.id}=${m.peerAddress}`)
    .join(',');
  return 'c-' + createHash('sha256').update(text).digest('hex').slice(0, 16);
}
