import { lastStoredTurn, type RunningTurnView, type StoredTurn, type TraceStep, type TurnStatus, type TurnView } from '../../kernel/index.ts';

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

const iso = (ms: number): string => new Date(ms).toISOString();

function partsOf(content: unknown): Loose[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

/** The text of the person's message: its text parts, a blank line between. */
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

function toStepView(step: TraceStep): TraceStepView {
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

/** A turn of the session as the view shows it. */
function toCommittedTurn(turn: StoredTurn): CommittedTurnView {
  const { messages, record, at } = turn;
  const first = messages[0] as Loose;
  const durations = new Map((record?.steps ?? []).flatMap((step) => (step.kind === 'tool' ? [[step.toolCallId, step] as const] : [])));
  const calls = new Map<string, TurnToolCallView>();
  for (const message of messages.slice(1)) {
    if (!isRecord(message)) continue;
    for (const part of partsOf(message['content'])) {
      const id = typeof part['toolCallId'] === 'string' ? part['toolCallId'] : '';
      const name = typeof part['toolName'] === 'string' ? part['toolName'] : 'tool';
      if (part['type'] === 'tool-call') {
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
  }
  return {
    run_id: record === undefined || record.id === '' ? null : record.id,
    message: textOf(first['content']),
    received_at: at === undefined ? null : iso(at),
    status: record?.status ?? null,
    reason: record?.reason ?? null,
    started_at: record === undefined ? null : iso(record.startedAt),
    finished_at: record === undefined ? null : iso(record.finishedAt),
    text: turn.text,
    note: turn.note ?? null,
    usage: { input_tokens: record?.inputTokens ?? 0, output_tokens: record?.outputTokens ?? 0 },
    cost_usd: record?.costUsd ?? 0,
    model: record?.model ?? null,
    tool_calls: [...calls.values()],
    trace: (record?.steps ?? []).map(toStepView),
    messages: [...messages],
  };
}

/**
 * The last turn of an agent's session, read from its stored messages as the kernel reads a
 * committed turn (`lastStoredTurn`), the way the dashboard's chat groups them: a turn starts at the
 * person's message (the user message Loom stamped, which carries the turn's record: how it ended,
 * its usage and its trace) and runs to the next one; its `text` is the reply the turn gave.
 */
export function toLastTurnView(session: AgentSessionView): LastTurnView {
  const turn = lastStoredTurn(session.messages);
  return { agent: session.agent, session_id: session.session_id, turn: turn === undefined ? null : toCommittedTurn(turn), running: session.running };
}
