import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** The HTTP status of the refusal behind `error`, when the daemon answered one. */
  status: number | undefined;
  loading: boolean;
  reload: () => void;
}

/** GETs `path` (again whenever a dependency changes) and keeps the last good answer while reloading. */
export function useApi<T>(path: string | undefined, deps: readonly unknown[] = []): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [status, setStatus] = useState<number | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    if (path === undefined) return undefined;
    const abort = new AbortController();
    setLoading(true);
    api<T>(path, { signal: abort.signal }).then(
      (value) => {
        setData(value);
        setError(undefined);
        setStatus(undefined);
        setLoading(false);
      },
      (cause: unknown) => {
        if (abort.signal.aborted) return;
        setError(cause instanceof Error ? cause.message : String(cause));
        setStatus(cause instanceof ApiError ? cause.status : undefined);
        setLoading(false);
      },
    );
    return () => abort.abort();
  }, [path, tick, ...deps]);
  return { data, error, status, loading, reload };
}
