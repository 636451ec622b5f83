import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import { pathOf } from '../../src/wire/api-client.ts';
import type { AnswerOf, ApiRoute, CallInput } from '../../src/wire/index.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** The HTTP status of the refusal behind `error`, when the daemon answered one. */
  status: number | undefined;
  loading: boolean;
  reload: () => void;
}

/** What {@link useApi} asks a route with: its path and query parameters (the path ones required when it has any), and the dependencies it reloads on. */
type UseApiArgs<R> = R extends { params: object }
  ? [input: Pick<CallInput<R>, 'params' | 'query'>, deps?: readonly unknown[]]
  : [input?: Pick<CallInput<R>, 'params' | 'query'>, deps?: readonly unknown[]];

/**
 * GETs `route` with `input`'s parameters (again whenever they or a dependency change) and keeps
 * the last good answer while reloading. `T` narrows an answer the route's table leaves wide.
 */
export function useApi<R extends ApiRoute & { method: 'get' }, T extends AnswerOf<R> = AnswerOf<R>>(route: R, ...[input, deps = []]: UseApiArgs<R>): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [status, setStatus] = useState<number | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  // The request's path (with its query) is what a change of parameters is seen by.
  const path = pathOf(route, input?.params, input?.query);
  useEffect(() => {
    const abort = new AbortController();
    setLoading(true);
    call<ApiRoute, T>(route, { ...input, signal: abort.signal }).then(
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
