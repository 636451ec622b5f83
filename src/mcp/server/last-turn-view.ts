import { z } from 'zod';
import type { RunningTurnView, TraceStep, TurnStatus, TurnView } from '../../kernel/index.ts';

/**
 * The key under a message's `providerOptions` where the kernel keeps what it knows of a message
 * (`at`, the turn's record, a note's status): the kernel's `LOOM_METADATA_KEY`
 * (src/kernel/turn-record.ts), which it does not export.
 */
const LOOM_METADATA_KEY = 'loom';

/** An agent's main session as Loom's MCP server serves it (`loom://agents/{name}/session`). */
export interface AgentSessionView {
  agent: string;
  session_id: string;
  /** The session's history: AI SDK model messages as stored, Loom's metadata under `providerOptions.loom`. */
  messages: readonly unknown[];
  /** The turn accepted and not yet committed to the session, if one runs (or waits). */
  running: RunningTurnView | null;
}

/** A tool call of a turn, paired with its result and its time from the turn's trace. */
export interface TurnToolCallView {
  id: string;
  name: string;
  input: unknown;
  /** The result as the model read it (text, or JSON); null when the call has no result. */
  output: unknown;
  is_error: boolean;
  /** From the call to its result, an approval wait included; null when the trace does not say. */
  duration_ms: number | null;
  /** How a person decided the call, when it waited for one. */
  approval: 'approved' | 'denied' | null;
}

/** One step of a turn's trace (the kernel's `TraceStep`), snake_case and with ISO times, as the API's views are. */
export type TraceStepView =
  | {
      kind: 'model';
      model: string;
      input_tokens: number;
      output_tokens: number;
      cache_read_tokens: number;
      cache_write_tokens: number;
      estimated: boolean;
      cost_usd: number;
      started_at: string;
      latency_ms: number;
    }
  | {
      kind: 'tool';
      tool_call_id: string;
      tool_name: string;
      started_at: string;
      duration_ms: number;
      is_error: boolean;
      approval: 'approved' | 'denied' | null;
    };

/**
 * A turn committed to a session: the fields of the turn view `loom send --json` prints (its reply
 * `text`, `usage`, `cost_usd`, `model`) with the person's message, how the turn ended, its tool
 * calls, its trace and its messages as stored. (No `iterations`: the session does not keep the
 * loop's count; the trace lists each model call.)
 */
export interface CommittedTurnView extends Omit<TurnView, 'model' | 'iterations'> {
  run_id: string | null;
  /** The person's message that started the turn. */
  message: string;
  received_at: string | null;
  /** How it ended; null for a turn stored before Loom recorded turns. */
  status: TurnStatus | null;
  /** Why it was cancelled or failed; null when it finished. */
  reason: string | null;
  started_at: string | null;
  finished_at: string | null;
  /** `provider/model` that answered; null when no model did (or the turn has no record). */
  model: string | null;
  /** The note Loom ended a turn that did not finish with, as the session keeps it. */
  note: string | null;
  tool_calls: TurnToolCallView[];
  trace: TraceStepView[];
  messages: unknown[];
}

/** An agent's last turn as Loom's MCP server serves it (`loom://agents/{name}/turns/last`). */
export interface LastTurnView {
  agent: string;
  session_id: string;
  /** The last turn committed to the session; null before the first. */
  turn: CommittedTurnView | null;
  /** A turn that runs (or waits) now and is not in the session yet. */
  running: RunningTurnView | null;
}

type Loose = Record<string, unknown>;

const isRecord = (value: unknown): value is Loose => typeof value === 'object' && value !== null && !Array.isArray(value);

// Read back from the store, so checked; loosely (unknown keys kept), since older Loom versions wrote them.
const TraceStepSchema = z.discriminatedUnion('kind', [
  z.looseObject({
    kind: z.literal('model'),
    model: z.string(),
    inputTokens: z.number(),
    outputTokens: z.number(),
    cacheReadTokens: z.number().optional(),
    cacheWriteTokens: z.number().optional(),
    estimated: z.boolean().optional(),
    costUsd: z.number(),
    startedAt: z.number(),
    latencyMs: z.number(),
  }),
  z.looseObject({
    kind: z.literal('tool'),
    toolCallId: z.string(),
    toolName: z.string(),
    startedAt: z.number(),
    durationMs: z.number(),
    isError: z.boolean(),
    approval: z.enum(['approved', 'denied']).optional(),
  }),
]);

const TurnRecordSchema = z.looseObject({
  id: z.string(),
  status: z.enum(['finished', 'cancelled', 'failed']),
  reason: z.string().nullable(),
  startedAt: z.number(),
  finishedAt: z.number(),
  model: z.string().nullable(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number(),
  steps: z.array(TraceStepSchema),
});

type StoredRecord = z.infer<typeof TurnRecordSchema>;

/** Loom's metadata of a message or a part (`providerOptions.loom`). */
function loomOf(value: Loose): Loose | undefined {
  const options = value['providerOptions'];
  const loom = isRecord(options) ? options[LOOM_METADATA_KEY] : undefined;
  return isRecord(loom) ? loom : undefined;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function partsOf(content: unknown): Loose[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

function textOf(content: unknown): string {
  return partsOf(content)
    .filter((part) => part['type'] === 'text' && typeof part['text'] === 'string')
    .map((part) => part['text'] as string)
    .join('\n\n');
}

/** A tool result's output as the model read it: its `value` (AI SDK `{ type, value }`), else as stored. */
function outputOf(output: unknown): { value: unknown; isError: boolean } {
  if (isRecord(output) && typeof output['type'] === 'string' && 'value' in output)
    return { value: output['value'], isError: output['type'].startsWith('error') };
  return { value: output ?? null, isError: false };
}

function toStepView(step: TraceStep | z.infer<typeof TraceStepSchema>): TraceStepView {
  return step.kind === 'model'
    ? {
        kind: 'model',
        model: step.model,
        input_tokens: step.inputTokens,
        output_tokens: step.outputTokens,
        cache_read_tokens: step.cacheReadTokens ?? 0,
        cache_write_tokens: step.cacheWriteTokens ?? 0,
        estimated: step.estimated ?? false,
        cost_usd: step.costUsd,
        started_at: iso(step.startedAt),
        latency_ms: step.latencyMs,
      }
    : {
        kind: 'tool',
        tool_call_id: step.toolCallId,
        tool_name: step.toolName,
        started_at: iso(step.startedAt),
        duration_ms: step.durationMs,
        is_error: step.isError,
        approval: step.approval ?? null,
      };
}

/**
 * Where the session's last turn starts: its last user message Loom stamped (`providerOptions.loom.at`);
 * in a session written before Loom stamped them, its last user message. -1 when there is none.
 * (An unstamped user message inside a stamped turn is the loop's, not the person's.)
 */
function lastTurnStart(messages: readonly unknown[]): number {
  let lastUser = -1;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (!isRecord(message) || message['role'] !== 'user') continue;
    if (typeof loomOf(message)?.['at'] === 'number') return index;
    if (lastUser === -1) lastUser = index;
  }
  return lastUser;
}

/** The turn that starts at `messages[0]`, as the view shows it. */
function toCommittedTurn(messages: readonly unknown[]): CommittedTurnView {
  const first = messages[0] as Loose;
  const loom = loomOf(first);
  const parsed = TurnRecordSchema.safeParse(loom?.['turn']);
  const record: StoredRecord | undefined = parsed.success ? parsed.data : undefined;
  const durations = new Map((record?.steps ?? []).flatMap((step) => (step.kind === 'tool' ? [[step.toolCallId, step] as const] : [])));
  const calls = new Map<string, TurnToolCallView>();
  let text = '';
  let note: string | null = null;
  for (const message of messages.slice(1)) {
    if (!isRecord(message)) continue;
    for (const part of partsOf(message['content'])) {
      const id = typeof part['toolCallId'] === 'string' ? part['toolCallId'] : '';
      const name = typeof part['toolName'] === 'string' ? part['toolName'] : 'tool';
      if (part['type'] === 'text' && message['role'] === 'assistant' && typeof part['text'] === 'string') {
        const status = loomOf(part)?.['note'];
        if (status === 'cancelled' || status === 'failed') note = part['text'];
      } else if (part['type'] === 'tool-call') {
        const step = durations.get(id);
        calls.set(id, {
          id,
          name,
          input: part['input'] ?? part['args'] ?? null,
          output: null,
          is_error: false,
          duration_ms: step?.durationMs ?? null,
          approval: step?.approval ?? null,
        });
      } else if (part['type'] === 'tool-result') {
        const { value, isError } = outputOf(part['output'] ?? part['result']);
        const call = calls.get(id) ?? {
          id,
          name,
          input: null,
          output: null,
          is_error: false,
          duration_ms: durations.get(id)?.durationMs ?? null,
          approval: null,
        };
        calls.set(id, { ...call, output: value, is_error: isError });
      }
    }
    // The reply is what the turn's last assistant message with text said, Loom's note left out.
    if (message['role'] === 'assistant') {
      const said = textOf(partsOf(message['content']).filter((part) => loomOf(part)?.['note'] === undefined));
      if (said !== '') text = said;
    }
  }
  const at = loom?.['at'];
  return {
    run_id: record === undefined || record.id === '' ? null : record.id,
    message: textOf(first['content']),
    received_at: typeof at === 'number' ? iso(at) : null,
    status: record?.status ?? null,
    reason: record?.reason ?? null,
    started_at: record === undefined ? null : iso(record.startedAt),
    finished_at: record === undefined ? null : iso(record.finishedAt),
    text,
    note,
    usage: { input_tokens: record?.inputTokens ?? 0, output_tokens: record?.outputTokens ?? 0 },
    cost_usd: record?.costUsd ?? 0,
    model: record?.model ?? null,
    tool_calls: [...calls.values()],
    trace: (record?.steps ?? []).map(toStepView),
    messages: [...messages],
  };
}

/**
 * The last turn of an agent's session, read from its stored messages the way the dashboard's
 * chat reads them: a turn starts at the person's message (the user message Loom stamped, which
 * carries the turn's record: how it ended, its usage and its trace) and runs to the next one.
 */
export function toLastTurnView(session: AgentSessionView): LastTurnView {
  const start = lastTurnStart(session.messages);
  return {
    agent: session.agent,
    session_id: session.session_id,
    turn: start === -1 ? null : toCommittedTurn(session.messages.slice(start)),
    running: session.running,
  };
}
