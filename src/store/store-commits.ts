import { performance } from 'node:perf_hooks';

/** A store transaction that committed: which kind of store, and how long it took from BEGIN to COMMIT. */
export interface StoreCommit {
  store: 'sqlite' | 'postgres';
  durationMs: number;
}

const observers = new Set<(commit: StoreCommit) => void>();

/**
 * Calls `listener` with every store transaction that commits in this process (a turn's messages
 * and usage, an agent's spawn, a package run's step…), for the daemon's metrics. Process-wide,
 * as the model-call observer is: the metrics do not hold the store. A listener must not throw (if
 * it does, the error is swallowed: monitoring never fails a write). Returns a function that stops it.
 */
export function observeStoreCommits(listener: (commit: StoreCommit) => void): () => void {
  observers.add(listener);
  return () => observers.delete(listener);
}

/** When a transaction starts, for {@link tellCommit}; undefined (no clock read) while nobody observes. */
export function commitStart(): number | undefined {
  return observers.size === 0 ? undefined : performance.now();
}

/** Tells the observers that a transaction started at `started` (by {@link commitStart}) committed. */
export function tellCommit(store: StoreCommit['store'], started: number | undefined): void {
  if (started === undefined) return;
  const commit = { store, durationMs: performance.now() - started };
  for (const listener of observers) {
    try {
      listener(commit);
    } catch {
      // Monitoring never fails a write.
    }
  }
}
