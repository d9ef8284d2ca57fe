// Which cluster member a peer certificate speaks for. A member's peer certificate carries the
// URI `urn:herald:member:<id>` in its subject alternative names; both ends of a peer connection
// check it, so a node holding a valid certificate for n2 can neither pose as n3 to the nodes it
// dials nor send messages in n3's name to the nodes that accept it.

import type { PeerCertificate } from 'node:tls';

export const MEMBER_URI_PREFIX = 'urn:herald:member:';

/** The SAN URI naming `id` (what `herald certs issue --member` writes). */
export function memberUri(id: string): string {
  return MEMBER_URI_PREFIX + id;
}

/** Member ids a certificate names (usually one). */
export function memberIdsOf(cert: Pick<PeerCertificate, 'subjectaltname'> | undefined): string[] {
  const san = cert?.subjectaltname;
  if (!san) return [];
  const out: string[] = [];
  // Node renders SANs as `URI:urn:herald:member:n1, IP Address:127.0.0.1, DNS:...`.
  for (const part of san.split(/,\s*/)) {
    if (!part.startsWith('URI:')) continue;
    const uri = part.slice(4).replace(/^"|"$/g, '');
    if (uri.startsWith(MEMBER_URI_PREFIX) && uri.length > MEMBER_URI_PREFIX.length) out.push(uri.slice(MEMBER_URI_PREFIX.length));
  }
  return out;
}

/**
 * The TLS client's check when dialling member `expected`'s peer port: the chain was verified
 * against the peer CA already; the certificate must name that member. Host names are not
 * checked: the member id pins the identity (a peer reached through a proxy or NAT keeps it).
 */
export function expectMember(expected: string): (hostname: string, cert: PeerCertificate) => Error | undefined {
  return (_hostname, cert) => {
    const ids = memberIdsOf(cert);
    if (ids.includes(expected)) return undefined;
    return new Error(
      `peer certificate names ${ids.length ? ids.map((i) => `member ${i}`).join(', ') : 'no member'} (SAN URI ${MEMBER_URI_PREFIX}<id>); expected member ${expected}`,
    );
  };
}
