const integer = new Intl.NumberFormat('en-US');

export function formatTokens(count: number): string {
  return integer.format(count);
}

/** ` · 1,200 cache read · 300 cache write`: what the prompt cache read and wrote, each only when any; empty when neither. */
export function formatCached(read: number | undefined, write: number | undefined): string {
  return `${(read ?? 0) > 0 ? ` · ${formatTokens(read ?? 0)} cache read` : ''}${(write ?? 0) > 0 ? ` · ${formatTokens(write ?? 0)} cache write` : ''}`;
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0.00';
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

export function formatTime(at: number | string): string {
  const date = new Date(at);
  return date.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
