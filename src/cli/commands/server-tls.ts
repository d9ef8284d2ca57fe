// `herald server` transport-security flags: certificates for the client port (TLS) and the peer
// port (mutual TLS), or an explicit --insecure. Reload on SIGHUP and on file change.
import type { Command } from 'commander';
import type { Logger } from 'pino';
import { isHeraldError } from '../../herald-error.js';
import { insecureRefusal } from '../../server/grpc/tls/insecure-policy.js';
import { DEFAULT_CERT_POLL_MS, NodeTls } from '../../server/grpc/tls/node-tls.js';

export interface TlsFlags {
  insecure?: boolean;
  allowInsecureNetwork?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
  tlsCa?: string;
  peerCert?: string;
  peerKey?: string;
  peerCa?: string;
  certPollMs: string;
}

export function addTlsFlags(cmd: Command): Command {
  return cmd
    .option('--tls-cert <file>', 'client port: certificate chain (PEM) this node presents')
    .option('--tls-key <file>', 'client port: private key (PEM) of --tls-cert')
    .option('--tls-client-ca <file>', 'client port: CA bundle (PEM) client certificates are verified against')
    .option('--tls-ca <file>', "CA bundle (PEM) of the members' client-port certificates, for forwarding to the leader (default: --peer-ca)")
    .option('--peer-cert <file>', 'peer port: certificate (PEM) naming this member (SAN URI urn:herald:member:<id>)')
    .option('--peer-key <file>', 'peer port: private key (PEM) of --peer-cert')
    .option('--peer-ca <file>', "peer port: CA bundle (PEM) the other members' certificates must chain to")
    .option('--cert-poll-ms <ms>', 'check the certificate files for changes this often (SIGHUP reloads at once)', String(DEFAULT_CERT_POLL_MS))
    .option('--insecure', 'serve both ports in plaintext, without TLS (loopback addresses only, unless --allow-insecure-network)')
    .option('--allow-insecure-network', 'with --insecure: allow plaintext on non-loopback listen addresses');
}

/**
 * The node's TLS from the flags, or undefined for --insecure. Writes why and throws a usage
 * error (exit 2) when the flags are incomplete, contradictory or a file does not load.
 */
export function tlsFromFlags(f: TlsFlags, listen: readonly string[]): NodeTls | undefined {
  const given = (['tlsCert', 'tlsKey', 'tlsClientCa', 'tlsCa', 'peerCert', 'peerKey', 'peerCa'] as const).filter((k) => f[k] !== undefined);
  if (f.insecure) {
    if (given.length > 0) throw new TlsFlagError(`--insecure contradicts ${given.map(flagName).join(', ')}; give one or the other`);
    const refusal = insecureRefusal(listen, f.allowInsecureNetwork === true);
    if (refusal) throw new TlsFlagError(refusal);
    return undefined;
  }
  if (f.allowInsecureNetwork) throw new TlsFlagError('--allow-insecure-network only goes with --insecure');
  const missing = (['tlsCert', 'tlsKey', 'peerCert', 'peerKey', 'peerCa'] as const).filter((k) => f[k] === undefined);
  if (missing.length > 0) {
    throw new TlsFlagError(
      `missing ${missing.map(flagName).join(', ')}: a node serves TLS on its client port and mutual TLS on its peer port (create certificates with \`herald certs init\` and \`herald certs issue\`), or runs plaintext with --insecure`,
    );
  }
  try {
    return new NodeTls({
      certFile: f.tlsCert!,
      keyFile: f.tlsKey!,
      clientCaFile: f.tlsClientCa,
      serverCaFile: f.tlsCa,
      peerCertFile: f.peerCert!,
      peerKeyFile: f.peerKey!,
      peerCaFile: f.peerCa!,
    });
  } catch (e) {
    if (isHeraldError(e)) throw new TlsFlagError(e.message);
    throw e;
  }
}

/** Poll the files and reload on SIGHUP; each change or refusal is logged. */
export function watchCertificates(tls: NodeTls, pollMs: number, log: Logger): void {
  const report = (label: string, o: { changed: boolean; error?: string }) => {
    if ('error' in o && o.error) log.error({ certificates: label, reason: o.error }, 'certificate reload refused; still serving the previous ones');
    else if (o.changed) log.info({ certificates: label }, 'certificates reloaded');
  };
  if (pollMs > 0) tls.watch(pollMs, report);
  process.on('SIGHUP', () => {
    for (const o of tls.reload()) report(o.label, o);
  });
}

export class TlsFlagError extends Error {}

function flagName(key: string): string {
  return '--' + key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}
