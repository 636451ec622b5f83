import { Cron } from 'croner';
import type { UsageRepository } from '../contracts/index.ts';
import type { Manifest } from '../manifest/index.ts';
import { formatCount } from '../runtime/index.ts';

/** An agent's day: when it began and when the next begins (epoch ms), midnight to midnight in a time zone. */
export interface Day {
  start: number;
  next: number;
}

/** The day `now` falls in, in `timezone` (daylight-saving days are 23 or 25 hours long, as croner counts them). */
export function dayOf(now: number, timezone: string): Day {
  const midnight = new Cron('0 0 * * *', { paused: true, timezone });
  const after = (at: number): number => midnight.nextRun(new Date(at))?.getTime() ?? Number.POSITIVE_INFINITY;
  // A day is at most 25 hours: the last midnight is after the instant 26 hours back.
  let start = after(now - 26 * 3600_000);
  for (let next = after(start); next <= now; next = after(start)) start = next;
  return { start, next: after(now) };
}

/**
 * Why the agent's daily budget (`[resources].max_tokens_per_day`, `max_cost_per_day`) stops its
 * scheduled wake-ups today, or undefined while it has some left (or sets none).
 */
export async function dailyBudgetRefusal(
  agent: { id: string; name: string; manifest: Manifest },
  usage: Pick<UsageRepository, 'totals'>,
  day: Day,
): Promise<string | undefined> {
  const { max_tokens_per_day: maxTokens, max_cost_per_day: maxCost } = agent.manifest.resources;
  if (maxTokens === 0 && maxCost === 0) return undefined;
  const spent = await usage.totals({ since: day.start, agentId: agent.id });
  const resumes = `scheduled wake-ups resume at ${new Date(day.next).toISOString()}`;
  const tokens = spent.inputTokens + spent.outputTokens;
  if (maxTokens > 0 && tokens >= maxTokens) {
    return `agent "${agent.name}" has used ${formatCount(tokens)} of its ${formatCount(maxTokens)} tokens today ([resources].max_tokens_per_day); ${resumes}`;
  }
  if (maxCost > 0 && spent.costUsd >= maxCost) {
    return `agent "${agent.name}" has spent $${spent.costUsd.toFixed(4)} of its $${maxCost.toFixed(4)} today ([resources].max_cost_per_day); ${resumes}`;
  }
  return undefined;
}
