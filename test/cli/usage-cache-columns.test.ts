import { describe, expect, it } from 'vitest';
import { formatUsageWithCache } from '../../src/cli/commands/usage-command.ts';
import type { UsageRow } from '../../src/kernel/index.ts';

const row = (extra: Partial<UsageRow> = {}): UsageRow => ({
  agent_id: 'a1',
  agent: 'researcher',
  model: 'anthropic/claude-sonnet-4-5',
  calls: 40,
  input_tokens: 64_000,
  output_tokens: 800,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  cost_usd: 0.05,
  ...extra,
});

describe('loom usage', () => {
  it('shows the input read from and written to the prompt cache beside all input, when there was any', () => {
    const table = formatUsageWithCache([row({ cache_read_tokens: 60_000, cache_write_tokens: 2_500 })]);
    const [header, line] = table.split('\n');
    expect(header?.split(/\s{2,}/)).toEqual(['AGENT', 'MODEL', 'CALLS', 'INPUT', 'CACHE READ', 'CACHE WRITE', 'OUTPUT', 'COST']);
    expect(line?.split(/\s{2,}/)).toEqual(['researcher', 'anthropic/claude-sonnet-4-5', '40', '64000', '60000', '2500', '800', '$0.0500']);
  });

  it('keeps the plain table when nothing was cached', () => {
    expect(formatUsageWithCache([row()]).split('\n')[0]).not.toContain('CACHE');
  });
});
