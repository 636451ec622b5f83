/** The value below which `fraction` of the sorted samples fall (nearest rank). */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** The median of `values` (in any order). */
export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

/** Rounds to 4 decimals, for readable JSON. */
export function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/** p50, p99 and throughput of a list of durations in milliseconds. */
export function summarize(durationsMs: readonly number[]): { p50_ms: number; p99_ms: number; ops_per_s: number; samples: number } {
  const sorted = [...durationsMs].sort((a, b) => a - b);
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    p50_ms: round(percentile(sorted, 0.5)),
    p99_ms: round(percentile(sorted, 0.99)),
    ops_per_s: round((sorted.length / total) * 1000),
    samples: sorted.length,
  };
}
