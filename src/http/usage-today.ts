import type { Day, UsageRow } from '../kernel/index.ts';
import type { UsageToday } from '../wire/index.ts';

export type { UsageToday };

/** Adds up the usage rows of `day` (those read since its start) into {@link UsageToday}. */
export function usageToday(rows: readonly UsageRow[], day: Day, timezone: string): UsageToday {
  const today: UsageToday = {
    timezone,
    since: day.start,
    until: day.next,
    tokens: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    cost_usd: 0,
  };
  for (const row of rows) {
    today.input_tokens += row.input_tokens;
    today.output_tokens += row.output_tokens;
    today.cache_read_tokens += row.cache_read_tokens;
    today.cache_write_tokens += row.cache_write_tokens;
    today.cost_usd += row.cost_usd;
  }
  today.tokens = today.input_tokens + today.output_tokens;
  return today;
}
