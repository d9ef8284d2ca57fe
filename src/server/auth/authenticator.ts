// Authentication: request metadata (and the transport's verified client certificate, if any) →
// a Principal, or UNAUTHENTICATED saying what was wrong. Transport-agnostic: gRPC passes its
// call metadata, the HTTP transport its Authorization header under the same key.
//
// Credentials, in order:
//   1. `authorization: Bearer hrd.<id>.<secret>` — a token from AuthService (token-secret.ts),
//      checked against the replicated record after a fresh-state barrier (the revocation rule,
//      fresh-state-barrier.ts).
//   2. A forwarded certificate principal (`herald-forwarded-principal`), only from a connection
//      whose verified certificate names a cluster member (a follower forwarding a write).
//   3. A client certificate verified against the client CA whose SAN URIs carry
//      `urn:herald:role:<role>`, optionally `urn:herald:principal:<name>` (else the subject CN)
//      and, for workers, one `urn:herald:task-type:<type>` per task type.
//   4. A member certificate (urn:herald:member:<id>) with no role: a node, e.g. one starting with
//      `--join` that asks for the members — a viewer (`member:<id>`). A member may already act
//      for any caller by forwarding (2), so reading grants it nothing new.
import type { PeerCertificate } from 'node:tls';
import { Role } from '../../gen/herald/v1/auth_service.js';
import type { TokenRecord } from '../../fsm/index.js';
import { HeraldError } from '../../herald-error.js';
import { FreshStateBarrier } from './fresh-state-barrier.js';
import { roleName, roleOf, type Principal } from './principal.js';
import { parseToken, secretMatches } from './token-secret.js';

export const AUTHORIZATION_KEY = 'authorization';
export const FORWARDED_PRINCIPAL_KEY = 'herald-forwarded-principal';

/** Metadata as both transports have it: the values of one key. */
export interface MetadataLike {
  get(key: string): Array<string | Buffer>;
}

/** What the transport verified about the caller's connection. */
export interface TransportIdentity {
  /** The client certificate, only when the TLS layer verified it against the client CA. */
  certificate?: Pick<PeerCertificate, 'subjectaltname' | 'subject'>;
  /** Member ids that certificate names (urn:herald:member:<id>): a fellow node. */
  memberIds: readonly string[];
}

export interface TokenSource {
  getToken(id: string): Promise<TokenRecord | undefined>;
}

const ROLE_URI = 'urn:herald:role:';
const NAME_URI = 'urn:herald:principal:';
const TASK_TYPE_URI = 'urn:herald:task-type:';
const MAX_HEADER = 512;

export class Authenticator {
  private readonly barrier: FreshStateBarrier;

  constructor(
    private readonly tokens: TokenSource,
    /** A read barrier on this node (HeraldNode.readIndex). */
    readIndex: () => Promise<unknown>,
  ) {
    this.barrier = new FreshStateBarrier(readIndex);
  }

  async authenticate(md: MetadataLike, transport: TransportIdentity): Promise<Principal> {
    const auth = first(md, AUTHORIZATION_KEY);
    if (auth !== undefined) return this.bearer(auth);
    const forwarded = first(md, FORWARDED_PRINCIPAL_KEY);
    if (forwarded !== undefined) return forwardedPrincipal(forwarded, transport);
    const fromCert = certificatePrincipal(transport);
    if (fromCert) return fromCert;
    if (transport.certificate && transport.memberIds.length > 0) {
      return { name: `member:${transport.memberIds[0]}`, role: Role.ROLE_VIEWER, taskTypes: new Set(), via: 'certificate' };
    }
    throw new HeraldError(
      'UNAUTHENTICATED',
      'no credential: send `authorization: Bearer <token>` (herald --token / HERALD_TOKEN, SDK option token) or a client certificate carrying a role (urn:herald:role:<role>)',
    );
  }

  /** A token principal's record is still there (long-lived streams re-check; no barrier: the leader's state). */
  async stillValid(p: Principal): Promise<boolean> {
    if (p.via !== 'token' || p.tokenId === undefined) return true;
    return (await this.tokens.getToken(p.tokenId)) !== undefined;
  }

  private async bearer(header: string): Promise<Principal> {
    const m = /^Bearer\s+(\S+)$/i.exec(header.length > MAX_HEADER ? '' : header);
    if (!m) throw new HeraldError('UNAUTHENTICATED', 'authorization: expected `Bearer <token>`');
    const parsed = parseToken(m[1]!);
    if (!parsed) throw new HeraldError('UNAUTHENTICATED', 'authorization: not a Herald token (hrd.<id>.<secret>)');
    await this.barrier.wait();
    const record = await this.tokens.getToken(parsed.id);
    if (!record || !secretMatches(record, parsed.secret)) {
      throw new HeraldError('UNAUTHENTICATED', `token ${parsed.id} is unknown or revoked (or its secret is wrong)`);
    }
    return { name: record.name, role: record.role, taskTypes: new Set(record.taskTypes), via: 'token', tokenId: record.id };
  }
}

function first(md: MetadataLike, key: string): string | undefined {
  const v = md.get(key)[0];
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : v.toString('utf8');
}

/** What a follower sends the leader for a certificate principal. */
export function encodeForwardedPrincipal(p: Principal): string {
  return Buffer.from(JSON.stringify({ n: p.name, r: p.role, t: [...p.taskTypes] })).toString('base64url');
}

function forwardedPrincipal(value: string, transport: TransportIdentity): Principal {
  if (transport.memberIds.length === 0) {
    throw new HeraldError('PERMISSION_DENIED', `${FORWARDED_PRINCIPAL_KEY} is accepted only from a cluster member (a certificate naming urn:herald:member:<id>)`);
  }
  try {
    const o = JSON.parse(Buffer.from(value.slice(0, 4 * MAX_HEADER), 'base64url').toString('utf8')) as { n: unknown; r: unknown; t: unknown };
    if (typeof o.n === 'string' && typeof o.r === 'number' && roleName(o.r) !== 'none' && Array.isArray(o.t) && o.t.every((x) => typeof x === 'string')) {
      return { name: o.n, role: o.r as Role, taskTypes: new Set(o.t as string[]), via: 'forwarded' };
    }
  } catch {
    // fall through
  }
  throw new HeraldError('UNAUTHENTICATED', `${FORWARDED_PRINCIPAL_KEY}: malformed`);
}

function certificatePrincipal(t: TransportIdentity): Principal | undefined {
  const san = t.certificate?.subjectaltname;
  if (!san) return undefined;
  let role: Role | undefined;
  let name = '';
  const taskTypes = new Set<string>();
  for (const part of san.split(/,\s*/)) {
    if (!part.startsWith('URI:')) continue;
    const uri = part.slice(4).replace(/^"|"$/g, '');
    if (uri.startsWith(ROLE_URI)) role = roleOf(uri.slice(ROLE_URI.length));
    else if (uri.startsWith(NAME_URI)) name = uri.slice(NAME_URI.length);
    else if (uri.startsWith(TASK_TYPE_URI)) taskTypes.add(uri.slice(TASK_TYPE_URI.length));
  }
  if (role === undefined) return undefined;
  const cn = t.certificate?.subject?.CN;
  return { name: name || (typeof cn === 'string' ? cn : 'certificate'), role, taskTypes: role === Role.ROLE_WORKER ? taskTypes : new Set(), via: 'certificate' };
}
