// What a follower sends the leader with a forwarded call so the leader can authenticate it
// itself: the caller's own bearer token, re-checked by the leader like any call; a certificate
// principal (the leader cannot see the client's certificate) travels as a forwarded principal,
// which the leader accepts only over a connection whose certificate names a cluster member
// (authenticator.ts). The forwarded-call marker itself grants nothing: it only stops a second hop.
import { Metadata } from '@grpc/grpc-js';
import { AUTHORIZATION_KEY, encodeForwardedPrincipal, FORWARDED_PRINCIPAL_KEY } from './authenticator.js';
import { principalOf } from './grpc-call-guard.js';

export function forwardingMetadata(call: { metadata: Metadata }, into: Metadata = new Metadata()): Metadata {
  const auth = call.metadata.get(AUTHORIZATION_KEY)[0];
  if (auth !== undefined) into.set(AUTHORIZATION_KEY, auth);
  else {
    const p = principalOf(call);
    if (p.via === 'certificate' || p.via === 'forwarded') into.set(FORWARDED_PRINCIPAL_KEY, encodeForwardedPrincipal(p));
  }
  return into;
}
