// When a node may serve plaintext: only when asked for (--insecure), and on an address other
// machines can reach only when that is asked for too (--allow-insecure-network). A plaintext
// port on a network lets anyone who reaches it read every payload and speak as any member.

import { isIP } from 'node:net';

/** The host part of host:port ([v6]:port too). */
export function hostOf(address: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (m) return m[1]!;
  const i = address.lastIndexOf(':');
  return i < 0 ? address : address.slice(0, i);
}

/** Loopback only: 127.0.0.0/8, ::1 and localhost. 0.0.0.0 and :: listen on every interface. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/**
 * Why plaintext is refused on these listen addresses, or undefined when it is allowed.
 * `addresses` are what the node will listen on (peer and client port).
 */
export function insecureRefusal(addresses: readonly string[], allowNetwork: boolean): string | undefined {
  if (allowNetwork) return undefined;
  const exposed = addresses.filter((a) => !isLoopbackHost(hostOf(a)));
  if (exposed.length === 0) return undefined;
  return `--insecure serves plaintext, unauthenticated ports; ${exposed.join(', ')} ${exposed.length > 1 ? 'are' : 'is'} not a loopback address (add --allow-insecure-network to accept that, or give certificates: --tls-cert/--tls-key and --peer-cert/--peer-key/--peer-ca)`;
}
