// The credentials of one node's two ports and of the connections it dials: TLS on the client
// port (client certificates requested, verified against the client CA when one is given), mutual
// TLS on the peer port (both sides present a certificate from the peer CA naming their member
// id). Every credential reads its files through a PemFileProvider, so reload() (SIGHUP) or the
// file poll rotates them for new connections without a restart.

import { experimental, type ChannelCredentials, type ServerCredentials } from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import { expectMember, memberIdsOf } from './member-identity.js';
import { PemFileProvider, type ReloadOutcome } from './pem-file-provider.js';

export interface NodeTlsFiles {
  /** The certificate and key this node presents on its client port. */
  certFile: string;
  keyFile: string;
  /** CA bundle client certificates are checked against (optional: tokens need none). */
  clientCaFile?: string;
  /** CA bundle that signed the other members' client-port certificates (this node forwards calls to the leader's client port). Default: peerCaFile. */
  serverCaFile?: string;
  /** The peer port's certificate (SAN URI urn:herald:member:<id>), key and CA bundle. */
  peerCertFile: string;
  peerKeyFile: string;
  peerCaFile: string;
}

/** How often certificate files are checked for changes by default. */
export const DEFAULT_CERT_POLL_MS = 5_000;

export class NodeTls {
  private readonly client: PemFileProvider;
  private readonly peer: PemFileProvider;
  private readonly serverCa: PemFileProvider;
  private readonly peerChannels = new Map<string, ChannelCredentials>();
  private clientServer?: ServerCredentials;
  private peerServer?: ServerCredentials;
  private forwarding?: ChannelCredentials;

  /** Reads every file now: a missing or unreadable one throws INVALID_ARGUMENT naming it. */
  constructor(readonly files: NodeTlsFiles) {
    this.client = new PemFileProvider({ certFile: files.certFile, keyFile: files.keyFile, caFile: files.clientCaFile }, 'client-port TLS (--tls-cert/--tls-key/--tls-client-ca)');
    this.peer = new PemFileProvider({ certFile: files.peerCertFile, keyFile: files.peerKeyFile, caFile: files.peerCaFile }, 'peer-port mTLS (--peer-cert/--peer-key/--peer-ca)');
    this.serverCa = new PemFileProvider({ caFile: files.serverCaFile ?? files.peerCaFile }, 'members\' client-port CA (--tls-ca)');
  }

  /** Client port: TLS; a client certificate is asked for but not required (a bearer token may stand in). */
  clientServerCredentials(): ServerCredentials {
    // grpc-js 1.14 hands its arguments to the credentials in the order (identity, CA or null),
    // whatever its parameter names say.
    return (this.clientServer ??= experimental.createCertificateProviderServerCredentials(this.client, this.files.clientCaFile ? this.client : null, false));
  }

  /** Peer port: mutual TLS, the dialler's certificate must chain to the peer CA. */
  peerServerCredentials(): ServerCredentials {
    return (this.peerServer ??= experimental.createCertificateProviderServerCredentials(this.peer, this.peer, true));
  }

  /** Dialling member `id`'s peer port: present our peer certificate, accept only one naming `id`. */
  peerChannelCredentials(id: string): ChannelCredentials {
    let c = this.peerChannels.get(id);
    if (!c) {
      c = experimental.createCertificateProviderChannelCredentials(this.peer, this.peer, { checkServerIdentity: expectMember(id) });
      this.peerChannels.set(id, c);
    }
    return c;
  }

  /**
   * Dialling another member's client port (forwarding to the leader): standard host-name check,
   * presenting this node's peer certificate, which names its member id: the leader accepts a
   * forwarded certificate principal only from a member (auth/authenticator.ts), when its client
   * CA bundle trusts the peer CA.
   */
  forwardingChannelCredentials(): ChannelCredentials {
    return (this.forwarding ??= experimental.createCertificateProviderChannelCredentials(this.serverCa, this.peer));
  }

  /** Re-reads every file; each changed set serves new connections, a bad one is refused with its reason. */
  reload(): Array<{ label: string } & ReloadOutcome> {
    return [this.client, this.peer, this.serverCa].map((p) => ({ label: p === this.client ? 'client' : p === this.peer ? 'peer' : 'server-ca', ...p.reload() }));
  }

  watch(intervalMs: number, onReload: (label: string, o: ReloadOutcome) => void): void {
    this.client.watch(intervalMs, (o) => onReload('client', o));
    this.peer.watch(intervalMs, (o) => onReload('peer', o));
    this.serverCa.watch(intervalMs, (o) => onReload('server-ca', o));
  }

  stop(): void {
    for (const p of [this.client, this.peer, this.serverCa]) p.stopWatching();
  }
}

/**
 * The member ids the certificate of a call's connection names; undefined when the connection is
 * not TLS (an insecure node). grpc-js reports only certificates the TLS layer verified.
 */
export function callerMemberIds(call: { getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: PeerCertificate } }): string[] | undefined {
  const ctx = call.getAuthContext();
  if (ctx.transportSecurityType !== 'ssl') return undefined;
  return memberIdsOf(ctx.sslPeerCertificate);
}
