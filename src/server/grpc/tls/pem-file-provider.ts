// Certificates and keys from PEM files, re-read without a restart: grpc-js asks a
// CertificateProvider for them and rebuilds its TLS context on every update. grpc-js ships a
// FileWatcherCertificateProvider, but it cannot be told to re-read now (SIGHUP), drops the old
// certificates when a file is briefly missing mid-rotation, and never checks that a new pair
// loads; this one keeps serving the last good pair and reports why it refused a new one.

import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { experimental } from '@grpc/grpc-js';
import { HeraldError } from '../../../herald-error.js';

type CertificateProvider = experimental.CertificateProvider;
type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

export interface PemFiles {
  /** Certificate chain this side presents (PEM); with `keyFile`. */
  certFile?: string;
  keyFile?: string;
  /** CA bundle the other side's certificate must chain to (PEM). */
  caFile?: string;
}

interface Loaded {
  identity?: { certificate: Buffer; privateKey: Buffer };
  ca?: { caCertificate: Buffer };
  /** Modification times the files had when read (a poll re-reads only on change). */
  stamp: string;
}

export type ReloadOutcome = { changed: boolean } | { changed: false; error: string };

/**
 * One set of PEM files. The constructor reads and checks them (a bad file refuses startup with
 * its name); reload() re-reads and notifies grpc-js when they changed; watch() polls their
 * modification times.
 */
export class PemFileProvider implements CertificateProvider {
  private current: Loaded;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly files: PemFiles,
    private readonly label: string,
  ) {
    if ((files.certFile === undefined) !== (files.keyFile === undefined)) {
      throw new HeraldError('INVALID_ARGUMENT', `${label}: a certificate and its key go together (got only the ${files.certFile ? 'certificate' : 'key'})`);
    }
    const loaded = this.read();
    if ('error' in loaded) throw new HeraldError('INVALID_ARGUMENT', loaded.error);
    this.current = loaded;
  }

  /** Re-reads the files; on change, the new pair serves new connections. A bad new set is refused (the old one stays). */
  reload(): ReloadOutcome {
    const next = this.read();
    if ('error' in next) return { changed: false, error: next.error };
    const same =
      sameBytes(next.identity?.certificate, this.current.identity?.certificate) &&
      sameBytes(next.identity?.privateKey, this.current.identity?.privateKey) &&
      sameBytes(next.ca?.caCertificate, this.current.ca?.caCertificate);
    this.current = next;
    if (same) return { changed: false };
    for (const l of this.identityListeners) l(next.identity ?? null);
    for (const l of this.caListeners) l(next.ca ?? null);
    return { changed: true };
  }

  /** Polls the files' modification times every `intervalMs`; `onReload` hears of every change or refusal. */
  watch(intervalMs: number, onReload: (o: ReloadOutcome) => void): void {
    this.stopWatching();
    this.timer = setInterval(() => {
      if (this.stamp() === this.current.stamp) return;
      const o = this.reload();
      if (o.changed || 'error' in o) onReload(o);
    }, intervalMs);
    this.timer.unref();
  }

  stopWatching(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The CA bundle as read last (clients built outside grpc-js's provider plumbing use it). */
  caBytes(): Buffer | undefined {
    return this.current.ca?.caCertificate;
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    // grpc-js registers its watcher after adding the listener: the first update must come later.
    process.nextTick(listener, this.current.ca ?? null);
  }
  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }
  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    process.nextTick(listener, this.current.identity ?? null);
  }
  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }

  private stamp(): string {
    return [this.files.certFile, this.files.keyFile, this.files.caFile]
      .map((f) => {
        if (f === undefined) return '-';
        try {
          const s = statSync(f);
          return `${s.mtimeMs}:${s.size}`;
        } catch {
          return 'missing';
        }
      })
      .join('|');
  }

  private read(): Loaded | { error: string } {
    const stamp = this.stamp();
    const f = this.files;
    let certificate: Buffer | undefined;
    let privateKey: Buffer | undefined;
    let caCertificate: Buffer | undefined;
    try {
      if (f.certFile !== undefined) certificate = readPem(f.certFile, 'CERTIFICATE');
      if (f.keyFile !== undefined) privateKey = readPem(f.keyFile, 'PRIVATE KEY');
      if (f.caFile !== undefined) caCertificate = readPem(f.caFile, 'CERTIFICATE');
      // Node checks that the key matches the certificate and that every PEM block parses.
      createSecureContext({ cert: certificate, key: privateKey, ca: caCertificate });
    } catch (e) {
      return { error: `${this.label}: ${e instanceof Error ? e.message : String(e)}` };
    }
    return {
      stamp,
      ...(certificate && privateKey ? { identity: { certificate, privateKey } } : {}),
      ...(caCertificate ? { ca: { caCertificate } } : {}),
    };
  }
}

function readPem(file: string, kind: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new Error(`cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  if (!bytes.includes(`-----BEGIN `) || !bytes.includes(kind)) throw new Error(`${file} holds no PEM ${kind}`);
  return bytes;
}

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}
