import type { UsageRecord } from '../contracts/index.ts';
import type { UsageRow } from '../wire/index.ts';

export type { UsageRow };

/** Adds usage records up by agent and model, most expensive first. */
export function summarizeUsage(records: readonly UsageRecord[], nameOf: (agentId: string) => string | undefined): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  for (const record of records) {
    const key = `${record.agentId}\u0000${record.model}`;
    let row = rows.get(key);
    if (row === undefined) {
      row = {
        agent_id: record.agentId,
        agent: nameOf(record.agentId) ?? null,
        model: record.model,
        calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: 0,
      };
      rows.set(key, row);
    }
    row.calls += 1;
    row.input_tokens += record.inputTokens;
    row.output_tokens += record.outputTokens;
    row.cache_read_tokens += record.cacheReadTokens ?? 0;
    row.cache_write_tokens += record.cacheWriteTokens ?? 0;
    row.cost_usd += record.costUsd;
  }
  return [...rows.values()].sort((a, b) => b.cost_usd - a.cost_usd || b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens));
}
