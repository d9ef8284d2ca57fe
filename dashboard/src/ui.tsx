// Small shared pieces: data loading, confirmation, errors, state badges.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  reload(): void;
}

/** Runs `load` now, again when `deps` change, and every `everyMs` when given. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], everyMs = 0): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(undefined);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError(e instanceof Error ? e : new Error(String(e)));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  useEffect(() => {
    if (!everyMs) return;
    const t = setInterval(reload, everyMs);
    return () => clearInterval(t);
  }, [everyMs, reload]);
  return { data, error, loading, reload };
}

export function ErrorLine({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const code = error instanceof ApiError ? `${error.code}${error.heraldCode && error.heraldCode !== error.code ? ` (${error.heraldCode})` : ''}: ` : '';
  return (
    <p class="error" role="alert">
      {code}
      {error.message}
    </p>
  );
}

export function Badge({ value, kind }: { value: string; kind: string }) {
  return <span class={`badge ${kind}-${value.replace(/\s+/g, '-')}`}>{value}</span>;
}

export interface PendingConfirm {
  title: string;
  body: string;
  action: string;
  danger?: boolean;
  run(): Promise<unknown>;
}

/** A modal confirmation (native <dialog>: focus trapped, Escape cancels). */
export function ConfirmDialog({ pending, onDone }: { pending: PendingConfirm | undefined; onDone(result: { ok: boolean; error?: Error }): void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (pending && !d.open) {
      setError(undefined);
      d.showModal();
    } else if (!pending && d.open) d.close();
  }, [pending]);
  const confirm = async () => {
    if (!pending) return;
    setBusy(true);
    try {
      await pending.run();
      setBusy(false);
      onDone({ ok: true });
    } catch (e) {
      setBusy(false);
      setError(e as Error);
    }
  };
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onCancel={() => onDone({ ok: false })}>
      {pending && (
        <form method="dialog" onSubmit={(e) => (e.preventDefault(), void confirm())}>
          <h2 id="confirm-title">{pending.title}</h2>
          <p>{pending.body}</p>
          <ErrorLine error={error} />
          <div class="buttons">
            <button type="button" onClick={() => onDone({ ok: false })}>
              Cancel
            </button>
            <button type="submit" class={pending.danger ? 'danger' : 'primary'} disabled={busy} autofocus>
              {busy ? 'Working…' : pending.action}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card" aria-label={title}>
      <header class="card-head">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

export function Stat({ label, value, warn }: { label: string; value: ComponentChildren; warn?: boolean }) {
  return (
    <div class={`stat${warn ? ' warn' : ''}`}>
      <div class="stat-value">{value}</div>
      <div class="stat-label">{label}</div>
    </div>
  );
}
