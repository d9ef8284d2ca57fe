// Page tokens of the read paths: the last key returned, base64url — opaque to clients, and
// checked on the way in to lie under the range the call reads.
import { HeraldError } from '../../herald-error.js';

export function encodeToken(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

export function decodeToken(token: string, prefix: string): string {
  const key = Buffer.from(token, 'base64url').toString('utf8');
  if (!key.startsWith(prefix) || encodeToken(key) !== token) {
    throw new HeraldError('INVALID_ARGUMENT', 'page_token: not a token from a previous response of this call', { field: 'page_token' });
  }
  return key;
}
