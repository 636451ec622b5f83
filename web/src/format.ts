const integer = new Intl.NumberFormat('en-US');

export function formatTokens(count: number): string {
  return integer.format(count);
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
