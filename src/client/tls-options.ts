// TLS for the SDK and the Worker: the CA bundle that signed the cluster's client-port
// certificates, and optionally a client certificate and key (for clusters that verify them).
import { credentials, type ChannelCredentials } from '@grpc/grpc-js';

export interface ClientTls {
  /** CA bundle (PEM) the servers' certificates chain to; default: the system's roots. */
  ca?: string | Buffer;
  /** Client certificate chain and key (PEM), both or neither. */
  cert?: string | Buffer;
  key?: string | Buffer;
}

function bytes(v: string | Buffer | undefined): Buffer | null {
  return v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v);
}

export function tlsCredentials(tls: ClientTls): ChannelCredentials {
  if ((tls.cert === undefined) !== (tls.key === undefined)) throw new TypeError('tls: cert and key go together (got only the ' + (tls.cert ? 'cert' : 'key') + ')');
  return credentials.createSsl(bytes(tls.ca), bytes(tls.key), bytes(tls.cert));
}
