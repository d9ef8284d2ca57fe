// The dashboard: a Preact app served by every node (docs/dashboard.md).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, onAuthError, setToken, token } from './api.js';
import { forgetDenied, probeRole } from './permissions.js';
import { redeemLoginLink } from './login-link.js';
import { go, href, useRoute } from './router.js';
import { Overview } from './pages/overview.js';
import { Jobs } from './pages/jobs.js';
import { JobPage } from './pages/job.js';
import { Runs } from './pages/runs.js';
import { Workers } from './pages/workers.js';
import { CLUSTER } from './types.js';

// A login link (`herald dev` prints one): the token rides in the fragment, which never reaches a
// server or its logs, and leaves the address bar at once; a link token signs in once
// (login-link.ts).
const fromLink = /^#\/?login=([^&]+)/.exec(location.hash);
if (fromLink) history.replaceState(null, '', `${location.pathname}#/`);

function Login({ reason }: { reason: string }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setToken(value.trim());
    forgetDenied();
    try {
      await call(`${CLUSTER}/GetStatus`);
      await probeRole();
      go([]);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div class="page login">
      <h1>Sign in</h1>
      {reason && <p class="notice">{reason}</p>}
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} required autofocus />
        <p class="muted small">Kept in this tab only (sessionStorage) and sent as the Authorization header.</p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
    </div>
  );
}

const NAV: Array<[string, string[]]> = [
  ['Overview', []],
  ['Jobs', ['jobs']],
  ['Runs', ['runs']],
  ['Dead letters', ['runs', 'dead']],
  ['Workers', ['workers']],
];

function App({ linkFailure }: { linkFailure: string }) {
  const route = useRoute();
  const [, setRoleKnown] = useState(false);
  useEffect(() => {
    // Without a token there is no role to find out (sign-in probes once a token is given).
    if (token()) void probeRole().then(() => setRoleKnown(true));
  }, []);
  const [authReason, setAuthReason] = useState(linkFailure);
  const [signedIn, setSignedIn] = useState(token() !== '');
  useEffect(
    () =>
      onAuthError((e) => {
        if (e.code === 'UNAUTHENTICATED') {
          setAuthReason(`The node asks for a token: ${e.message}`);
          go(['login']);
        }
      }),
    [],
  );
  useEffect(() => setSignedIn(token() !== ''), [route]);
  const page = route.path[0] ?? '';
  const current = (p: string[]) => p.join('/') === route.path.slice(0, p.length).join('/') && (p.length > 0 || page === '') && !(p[0] === 'runs' && p.length === 1 && route.path[1] === 'dead');
  let body;
  if (page === 'login') body = <Login reason={authReason} />;
  else if (page === 'jobs' && route.path[1]) body = <JobPage id={route.path[1]} />;
  else if (page === 'jobs') body = <Jobs route={route} />;
  else if (page === 'runs') body = <Runs route={route} />;
  else if (page === 'workers') body = <Workers />;
  else body = <Overview />;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href([])}>
          Herald
        </a>
        <nav aria-label="pages">
          {NAV.map(([label, p]) => (
            <a key={label} href={href(p)} aria-current={current(p) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div class="session">
          {signedIn ? (
            <button
              type="button"
              class="small"
              onClick={() => {
                setToken('');
                forgetDenied();
                setSignedIn(false);
                go(['login']);
              }}
            >
              Sign out
            </button>
          ) : (
            <a href={href(['login'])}>Sign in</a>
          )}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {body}
      </main>
    </>
  );
}

async function boot(): Promise<void> {
  if (fromLink) forgetDenied();
  const linkFailure = fromLink ? await redeemLoginLink(decodeURIComponent(fromLink[1]!)) : '';
  // Straight to the sign-in page: a page mounted first would call without a token and replace
  // the reason with its own refusal.
  if (linkFailure) history.replaceState(null, '', `${location.pathname}#/login`);
  render(<App linkFailure={linkFailure} />, document.getElementById('app')!);
}
void boot();
