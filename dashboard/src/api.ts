// Calls to the node's HTTP port (docs/http-api.md): POST /<Service>/<Method> with JSON, and
// watch streams as server-sent events read through fetch (EventSource cannot send the
// Authorization header). The token lives in sessionStorage: gone when the tab closes.

const TOKEN_KEY = 'herald.token';

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

export function setToken(value: string): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A failed call: the gRPC code name, the message and Herald's code, as the server sent them. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly heraldCode: string | undefined,
    readonly httpStatus: number,
  ) {
    super(message);
  }
}

type Listener = (e: ApiError) => void;
const authListeners = new Set<Listener>();
/** Told of every UNAUTHENTICATED / PERMISSION_DENIED answer (login and what a role may do). */
export function onAuthError(fn: Listener): () => void {
  authListeners.add(fn);
  return () => authListeners.delete(fn);
}

function headers(): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  const t = token();
  if (t) h.authorization = `Bearer ${t}`;
  return h;
}

async function failure(res: Response, method: string): Promise<ApiError> {
  let body: { code?: string; message?: string; heraldCode?: string } = {};
  try {
    body = (await res.json()) as typeof body;
  } catch {
    // not a JSON error body
  }
  const e = new ApiError(body.code ?? `HTTP_${res.status}`, body.message ?? `${method}: HTTP ${res.status}`, body.heraldCode, res.status);
  if (e.code === 'UNAUTHENTICATED' || e.code === 'PERMISSION_DENIED') {
    for (const fn of authListeners) fn(Object.assign(e, { method }));
  }
  return e;
}

/** A unary call, e.g. call('herald.v1.JobService/ListJobs', { pageSize: 50 }). */
export async function call<T>(method: string, request: object = {}): Promise<T> {
  const res = await fetch(`./${method}`, { method: 'POST', headers: { ...headers(), 'timeout-ms': '15000' }, body: JSON.stringify(request) });
  if (!res.ok) throw await failure(res, method);
  return (await res.json()) as T;
}

/**
 * A server stream: `onMessage` per stream message until `signal` aborts it or the server ends it.
 * Resolves when the stream ends; rejects with the stream's error.
 */
export async function stream<T>(method: string, request: object, onMessage: (m: T) => void, signal: AbortSignal): Promise<void> {
  const res = await fetch(`./${method}`, { method: 'POST', headers: headers(), body: JSON.stringify(request), signal });
  if (!res.ok || !res.body) throw await failure(res, method);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += value;
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let name = 'message';
      let data = '';
      for (const line of event.split('\n')) {
        if (line.startsWith('event: ')) name = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (!data) continue;
      const parsed = JSON.parse(data) as T & { code?: string; message?: string; heraldCode?: string };
      if (name === 'error') throw new ApiError(parsed.code ?? 'UNKNOWN', parsed.message ?? 'stream failed', parsed.heraldCode, 200);
      onMessage(parsed);
    }
  }
}
