import { z } from 'zod';
import type { AgentRecord, EventRecord, TurnJournalRecord, TurnStepRecord, UsageBucket, UsageRecord, UsageTotals } from '../contracts/index.ts';
import { jsonObjectText, jsonText } from './rows.ts';

/*
 * The rows of every table as both stores read them back: the same columns, names and types in
 * SQLite and PostgreSQL (JSON as text, times as whole milliseconds), mapped to the contract's
 * records in one place. Each `…Columns` is the select list the schema beside it reads.
 */

export const agentColumns = 'id, name, state, parent_id, session_id, manifest, created_at, updated_at';

/** A row of `agents`. */
export const agentRow = z
  .object({
    id: z.string(),
    name: z.string(),
    state: z.enum(['running', 'suspended']),
    parent_id: z.string().nullable(),
    session_id: z.string(),
    manifest: jsonObjectText,
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): AgentRecord => ({
    id: row.id,
    name: row.name,
    state: row.state,
    parentId: row.parent_id,
    sessionId: row.session_id,
    manifest: row.manifest,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }));

export const sessionColumns = 'id, agent_id, created_at, updated_at, conversation';

/** A row of `sessions` (its messages are rows of `session_messages`). */
export const sessionRow = z.object({
  id: z.string(),
  agent_id: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
  conversation: z.string().nullable(),
});

/** A row of `session_messages`. */
export const sessionMessageRow = z.object({ message: jsonText });

/** The cached input tokens of a usage row or sum, as the store gives them: only when there were any. */
function cachedTokens(row: { cache_read_tokens: number; cache_write_tokens: number }): { cacheReadTokens?: number; cacheWriteTokens?: number } {
  return {
    ...(row.cache_read_tokens > 0 ? { cacheReadTokens: row.cache_read_tokens } : {}),
    ...(row.cache_write_tokens > 0 ? { cacheWriteTokens: row.cache_write_tokens } : {}),
  };
}

/** A row of `usage`. */
export const usageRow = z
  .object({
    agent_id: z.string(),
    at: z.number(),
    model: z.string(),
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_read_tokens: z.number(),
    cache_write_tokens: z.number(),
    cost_usd: z.number(),
    lineage: z.string().nullable(),
  })
  .transform((row): UsageRecord => ({
    agentId: row.agent_id,
    at: row.at,
    model: row.model,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    ...cachedTokens(row),
    costUsd: row.cost_usd,
    ...(row.lineage === null ? {} : { lineage: row.lineage }),
  }));

/** Usage totals: sums over `usage` (`input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`, `cost_usd`, `calls`). */
export const usageTotalsRow = z
  .object({
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_read_tokens: z.number(),
    cache_write_tokens: z.number(),
    cost_usd: z.number(),
    calls: z.number(),
  })
  .transform((row): UsageTotals => ({
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    ...cachedTokens(row),
    costUsd: row.cost_usd,
    calls: row.calls,
  }));

/** One bucket of `usage.series`: its start, agent and model, and the sums. */
export const usageBucketRow = z
  .object({
    start: z.number(),
    agent_id: z.string(),
    model: z.string(),
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_read_tokens: z.number(),
    cache_write_tokens: z.number(),
    cost_usd: z.number(),
    calls: z.number(),
  })
  .transform((row): UsageBucket => ({
    start: row.start,
    agentId: row.agent_id,
    model: row.model,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    ...cachedTokens(row),
    costUsd: row.cost_usd,
    calls: row.calls,
  }));

export const eventColumns = 'seq, at, type, agent_id, data';

/** A row of `events`. */
export const eventRow = z
  .object({
    seq: z.number(),
    at: z.number(),
    type: z.string(),
    agent_id: z.string().nullable(),
    data: jsonObjectText,
  })
  .transform((row): EventRecord => ({ seq: row.seq, at: row.at, type: row.type, agentId: row.agent_id, data: row.data }));

export const turnJournalColumns = 'id, agent_id, session_id, conversation, request, idempotency_key, received_at, state, outcome';

/** A row of `turn_journal` (its steps are rows of `turn_steps`). */
export const turnJournalRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    session_id: z.string(),
    conversation: z.string().nullable(),
    request: jsonObjectText,
    idempotency_key: z.string().nullable(),
    received_at: z.number(),
    state: z.enum(['running', 'done']),
    outcome: jsonObjectText.nullable(),
  })
  .transform((row): Omit<TurnJournalRecord, 'steps'> => ({
    id: row.id,
    agentId: row.agent_id,
    sessionId: row.session_id,
    conversation: row.conversation,
    request: row.request,
    idempotencyKey: row.idempotency_key,
    receivedAt: row.received_at,
    state: row.state,
    outcome: row.outcome,
  }));

/** The node holding the lease of a `turn_journal` row selected with its `node_id` (decision 0061); null when none does. */
export function turnNodeOf(row: Readonly<Record<string, unknown>>): string | null {
  return typeof row['node_id'] === 'string' ? row['node_id'] : null;
}

export const turnStepColumns = 'turn_id, seq, kind, at, data';

/** A row of `turn_steps`. */
export const turnStepRow = z
  .object({
    turn_id: z.string(),
    seq: z.number(),
    kind: z.enum(['model', 'tool-start', 'tool-result', 'approval', 'stream']),
    at: z.number(),
    data: jsonObjectText,
  })
  .transform((row): TurnStepRecord & { turnId: string } => ({ turnId: row.turn_id, kind: row.kind, at: row.at, data: row.data }));
