// The bearer token string and its check. A token reads `hrd.<id>.<secret>`: the id (public)
// finds the record, the secret (32 random bytes, base64url) is checked against the record's
// salted SHA-256 in constant time. A secret is high-entropy, so one hash round suffices (a slow
// KDF guards guessable passwords, which tokens are not) and every call can afford the check.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const TOKEN_RE = /^hrd\.([a-z0-9]{8,32})\.([A-Za-z0-9_-]{43})$/;

export interface NewTokenSecret {
  id: string;
  /** The whole bearer token, shown once. */
  token: string;
  salt: Uint8Array;
  hash: Uint8Array;
}

export function hashSecret(salt: Uint8Array, secret: string): Uint8Array {
  return createHash('sha256').update(salt).update(secret, 'utf8').digest();
}

/** A fresh token: its id, the token string, and what the state machine stores. */
export function newTokenSecret(): NewTokenSecret {
  const id = randomBytes(8).toString('hex');
  return fromParts(id, randomBytes(32).toString('base64url'));
}

/** The stored form of a given token string (the bootstrap admin token read from its file). */
export function tokenFromString(token: string): NewTokenSecret | undefined {
  const p = parseToken(token);
  return p && fromParts(p.id, p.secret);
}

function fromParts(id: string, secret: string): NewTokenSecret {
  const salt = randomBytes(16);
  return { id, token: `hrd.${id}.${secret}`, salt, hash: hashSecret(salt, secret) };
}

export function parseToken(token: string): { id: string; secret: string } | undefined {
  const m = TOKEN_RE.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

export function secretMatches(record: { salt: Uint8Array; hash: Uint8Array }, secret: string): boolean {
  const h = hashSecret(record.salt, secret);
  return h.length === record.hash.length && timingSafeEqual(h, record.hash);
}
