// A login link (`herald dev` prints one) carries a token minted for that link alone, named
// login-link-…: the page trades it at once for a session token of the same role and revokes the
// link's token, so the link signs in once — a copy left in shell history, a terminal scrollback
// or a screenshot is worthless afterwards. Any other token in a link is kept as it is (revoking
// it would lock out whoever else uses it).
import { ApiError, call, setToken } from './api.js';

const AUTH = 'herald.v1.AuthService';
export const LINK_TOKEN_PREFIX = 'login-link';

interface WhoAmI {
  name?: string;
  role?: string;
  authEnabled?: boolean;
}

/** Signs in with a link's token; '' when signed in, else why not (for the sign-in page). */
export async function redeemLoginLink(linkToken: string): Promise<string> {
  setToken(linkToken);
  let me: WhoAmI;
  try {
    me = await call<WhoAmI>(`${AUTH}/WhoAmI`, {});
  } catch (e) {
    setToken('');
    if (e instanceof ApiError && e.code === 'UNAUTHENTICATED') {
      return 'This login link was used already or revoked (a link signs in once). Run `herald dev` again for a new one, or sign in with the token in .herald/certs/admin.token.';
    }
    return `Signing in with the link failed: ${(e as Error).message}`;
  }
  if (!me.authEnabled || !me.name?.startsWith(LINK_TOKEN_PREFIX)) return '';
  const session = `dashboard-session-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    const created = await call<{ secret: string }>(`${AUTH}/CreateToken`, { name: session, role: me.role });
    setToken(created.secret);
    await call(`${AUTH}/RevokeToken`, { nameOrId: me.name });
    return '';
  } catch (e) {
    setToken('');
    return `Signing in with the link failed: ${(e as Error).message}`;
  }
}
