import type { ModelMessage, TextPart } from 'ai';
import { z } from 'zod';
import type { Clock, JsonObject } from '../contracts/index.ts';
import { modelName } from '../models/index.ts';
import type { AgentEventSink, ModelCallUsage } from '../runtime/index.ts';
import type { TraceStep, TurnRecord, TurnStatus } from '../wire/index.ts';

// What a session keeps of a turn is part of the API (the dashboard's transcript reads it): written once, in src/wire.
export type { TraceStep, TurnRecord, TurnStatus };

/**
 * The key under a message's `providerOptions` where Loom keeps what it knows of the message
 * (when it came, the turn it started). Providers read only their own key, so the model never
 * sees it; it is stored with the message, in the turn's one commit.
 */
const LOOM_METADATA_KEY = 'loom';

/** How a turn ended, and why when it did not finish. */
export type TurnEnding = { status: 'finished' } | { status: 'cancelled' | 'failed'; reason: string };

/** How the tool runner words a call a person did not approve. */
const NOT_APPROVED = /^the call to \S+ was not approved/;

/** A tool call's step of a trace. */
export type ToolTraceStep = Extract<TraceStep, { kind: 'tool' }>;

/** How a person decided a call that waited for one, by its result (an approved call ran, whatever it answered). */
export function approvalOf(isError: boolean, text: string): 'approved' | 'denied' {
  return isError && NOT_APPROVED.test(text) ? 'denied' : 'approved';
}

type PendingStep = { kind: 'model'; call: ModelCallUsage } | ToolTraceStep;

/**
 * Records a turn's trace as it runs: model calls as they answer (`model`), tool calls from their
 * `tool-call` to their `tool-result` event (`sink`), on the kernel's clock.
 */
export class TurnTrace {
  readonly #clock: Clock;
  readonly #steps: PendingStep[] = [];
  /** Tool calls waiting for their result, by call id. */
  readonly #running = new Map<string, { toolName: string; startedAt: number }>();
  /** Calls waiting for a person's approval (until their result). */
  readonly #asked = new Set<string>();
  readonly startedAt: number;
  runId: string | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.startedAt = clock.now();
  }

  /** Adds a model call that answered. */
  model(call: ModelCallUsage): void {
    this.#steps.push({ kind: 'model', call });
  }

  /** Adds a tool call that ended before the turn was resumed (from its journal, decision 0045). */
  tool(step: ToolTraceStep): void {
    this.#steps.push(step);
  }

  /**
   * Wraps a turn's event sink: it notes the run id, times each tool call, and adds the call's
   * `durationMs` to its `tool-result` event.
   */
  sink(emit: AgentEventSink): AgentEventSink {
    return (event) => {
      if (event.type === 'run-start') this.runId = event.runId;
      if (event.type === 'tool-call') this.#running.set(event.toolCallId, { toolName: event.toolName, startedAt: this.#clock.now() });
      if (event.type === 'approval-request') this.#asked.add(event.toolCallId);
      if (event.type === 'tool-result') {
        const now = this.#clock.now();
        const startedAt = this.#running.get(event.toolCallId)?.startedAt ?? now;
        this.#running.delete(event.toolCallId);
        const durationMs = now - startedAt;
        const asked = this.#asked.delete(event.toolCallId);
        const approval = asked ? approvalOf(event.isError, event.text) : undefined;
        this.#steps.push({
          kind: 'tool',
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          startedAt,
          durationMs,
          isError: event.isError,
          ...(approval === undefined ? {} : { approval }),
        });
        emit({ ...event, durationMs });
        return;
      }
      emit(event);
    };
  }

  /**
   * The turn's record as it ended. `costs` holds the price of each model call (as the turn's usage
   * records have it; a call not in it counts as free); `model` answered the turn, else the last
   * model called did. A tool call with no result (the turn ended during it) is in it as an error
   * that lasted until the end.
   */
  record(ending: TurnEnding, costs: ReadonlyMap<ModelCallUsage, number>, model: string | null): TurnRecord {
    const finishedAt = this.#clock.now();
    const cut = [...this.#running].map(([toolCallId, { toolName, startedAt }]): PendingStep => ({
      kind: 'tool',
      toolCallId,
      toolName,
      startedAt,
      durationMs: finishedAt - startedAt,
      isError: true,
    }));
    const steps = [...this.#steps, ...cut].map((step): TraceStep =>
      step.kind === 'tool'
        ? step
        : {
            kind: 'model',
            model: modelName(step.call.model),
            inputTokens: step.call.inputTokens,
            outputTokens: step.call.outputTokens,
            ...cachedOf(step.call.cacheReadTokens ?? 0, step.call.cacheWriteTokens ?? 0),
            ...(step.call.estimated === true ? { estimated: true } : {}),
            costUsd: costs.get(step.call) ?? 0,
            startedAt: step.call.startedAt ?? this.startedAt,
            latencyMs: step.call.latencyMs ?? 0,
          },
    );
    const models = steps.filter((step) => step.kind === 'model');
    return {
      id: this.runId ?? '',
      status: ending.status,
      reason: ending.status === 'finished' ? null : ending.reason,
      startedAt: this.startedAt,
      finishedAt,
      model: model ?? models.at(-1)?.model ?? null,
      inputTokens: models.reduce((total, step) => total + step.inputTokens, 0),
      outputTokens: models.reduce((total, step) => total + step.outputTokens, 0),
      ...cachedOf(
        models.reduce((total, step) => total + (step.cacheReadTokens ?? 0), 0),
        models.reduce((total, step) => total + (step.cacheWriteTokens ?? 0), 0),
      ),
      costUsd: models.reduce((total, step) => total + step.costUsd, 0),
      steps,
    };
  }
}

/** Cached input tokens as a record keeps them: only when there were any (absent means none). */
function cachedOf(cacheReadTokens: number, cacheWriteTokens: number): { cacheReadTokens?: number; cacheWriteTokens?: number } {
  return { ...(cacheReadTokens > 0 ? { cacheReadTokens } : {}), ...(cacheWriteTokens > 0 ? { cacheWriteTokens } : {}) };
}

/** `message` with Loom's metadata set to `metadata` (other providers' options kept). */
function withMetadata<Message extends ModelMessage>(message: Message, metadata: JsonObject): Message {
  return { ...message, providerOptions: { ...message.providerOptions, [LOOM_METADATA_KEY]: metadata } };
}

/** The note that ends a turn that did not finish, for the model to read next time and the transcript to show. */
function endingNote(ending: TurnEnding): string | undefined {
  if (ending.status === 'finished') return undefined;
  return ending.status === 'cancelled' ? `[This reply was cut short: ${ending.reason}]` : `[No reply: ${ending.reason}]`;
}

/**
 * A turn's messages as its session keeps them (`turn` starts with its user message): the user
 * message carries when it came and the turn's record; a cancelled turn ends with a note saying
 * so (after what it said), and a failed turn that said nothing with one saying why, so the model
 * knows next time and the next message never merges into this one.
 */
export function sealTurn(turn: readonly ModelMessage[], userMessage: ModelMessage, receivedAt: number, record: TurnRecord, ending: TurnEnding): ModelMessage[] {
  const sealed = turn.map((message) => (message === userMessage ? withMetadata(message, { at: receivedAt, turn: record }) : message));
  const note = endingNote(ending);
  const last = sealed.at(-1);
  if (note === undefined || (ending.status === 'failed' && last?.role !== 'user')) return sealed;
  const part: TextPart = { type: 'text', text: note, providerOptions: { [LOOM_METADATA_KEY]: { note: ending.status } } };
  if (last?.role === 'assistant' && (typeof last.content === 'string' || last.content.every((item) => item.type === 'text'))) {
    const content = typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : last.content;
    sealed[sealed.length - 1] = { ...last, content: [...content, part] };
  } else {
    sealed.push({ role: 'assistant', content: [part] });
  }
  return sealed;
}

/** Drops Loom's metadata (see {@link LOOM_METADATA_KEY}) from a message and its parts: a history as a code module sees it. */
function stripMetadata<Value>(value: Value): Value {
  if (typeof value !== 'object' || value === null || !('providerOptions' in value)) return value;
  const { providerOptions, ...rest } = value as { providerOptions?: Record<string, unknown> };
  const { [LOOM_METADATA_KEY]: _loom, ...others } = providerOptions ?? {};
  return (Object.keys(others).length === 0 ? rest : { ...rest, providerOptions: others }) as Value;
}

/** A history without Loom's metadata, for code that reads it as plain messages (code agents' modules). */
export function withoutMetadata(messages: readonly ModelMessage[]): ModelMessage[] {
  return messages.map((message) => {
    const stripped = stripMetadata(message);
    return Array.isArray(stripped.content) ? ({ ...stripped, content: stripped.content.map((part) => stripMetadata(part)) } as ModelMessage) : stripped;
  });
}

/** Loom's metadata of a stored message or part (under `providerOptions`), if it has any. */
function metadataOf(value: unknown): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const options = (value as { providerOptions?: Record<string, unknown> }).providerOptions;
  const metadata = options?.[LOOM_METADATA_KEY];
  return typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>) : undefined;
}

// A turn's record as read back from the store: checked, loosely (unknown keys kept), since older Loom versions wrote it.
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
  cacheReadTokens: z.number().optional(),
  cacheWriteTokens: z.number().optional(),
  costUsd: z.number(),
  steps: z.array(TraceStepSchema),
});

/**
 * A turn as a session's stored messages keep it (see {@link sealTurn}): from the person's message
 * (the user message Loom stamped; in a session written before Loom stamped them, a user message) up
 * to the next one. The one reading of a committed turn: the follower of a turn another node ran
 * and the MCP server's last-turn resource read it so.
 */
export interface StoredTurn {
  /** Its messages as stored, the person's first. */
  messages: readonly unknown[];
  /** When the person's message came; undefined in a session written before Loom stamped messages. */
  at: number | undefined;
  /** Its record; undefined for a turn stored before Loom recorded turns, or one that does not read as a record. */
  record: TurnRecord | undefined;
  /**
   * The reply: the text of its assistant messages in order, run together as the turn's result ran
   * its model calls' text together (nothing between), Loom's note left out. What `loom send`
   * printed, the API and the agent's MCP tool answered, and the stream's text deltas made.
   */
  text: string;
  /** The note Loom ended it with when it did not finish (see {@link sealTurn}); undefined when it finished. */
  note: string | undefined;
}

/** Whether `message` is a user message, and Loom stamped it (a person's: it starts a turn). */
function userStamp(message: unknown): { stamped: boolean } | undefined {
  if ((message as { role?: unknown } | null)?.role !== 'user') return undefined;
  return { stamped: typeof metadataOf(message)?.['at'] === 'number' };
}

/** The turn whose person's message is `messages[start]`. */
function storedTurnAt(messages: readonly unknown[], start: number): StoredTurn {
  const stamped = userStamp(messages[start])?.stamped === true;
  // The next turn starts at the next person's message: in a stamped turn, an unstamped user message is the loop's.
  let end = start + 1;
  for (; end < messages.length; end += 1) {
    const user = userStamp(messages[end]);
    if (user !== undefined && (user.stamped || !stamped)) break;
  }
  const turn = messages.slice(start, end);
  const metadata = metadataOf(turn[0]);
  const parsed = TurnRecordSchema.safeParse(metadata?.['turn']);
  let text = '';
  let note: string | undefined;
  for (const message of turn.slice(1)) {
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role !== 'assistant') continue;
    if (typeof content === 'string') text += content;
    else if (Array.isArray(content))
      for (const part of content as { type?: unknown; text?: unknown }[]) {
        if (part.type !== 'text' || typeof part.text !== 'string') continue;
        const status = metadataOf(part)?.['note'];
        if (status === undefined) text += part.text;
        else if (status === 'cancelled' || status === 'failed') note = part.text;
      }
  }
  const at = metadata?.['at'];
  return { messages: turn, at: typeof at === 'number' ? at : undefined, record: parsed.success ? (parsed.data as TurnRecord) : undefined, text, note };
}

/** The turn `turnId` as a session's stored messages keep it (see {@link StoredTurn}); undefined when the session holds no such turn. */
export function committedTurnOf(messages: readonly unknown[], turnId: string): (StoredTurn & { record: TurnRecord }) | undefined {
  const start = messages.findIndex((message) => (metadataOf(message)?.['turn'] as { id?: unknown } | undefined)?.id === turnId);
  if (start === -1) return undefined;
  const turn = storedTurnAt(messages, start);
  return turn.record === undefined ? undefined : { ...turn, record: turn.record };
}

/**
 * The last turn a session's stored messages keep (see {@link StoredTurn}): from its last user message
 * Loom stamped, or in a session written before Loom stamped them its last user message; undefined
 * when there is none.
 */
export function lastStoredTurn(messages: readonly unknown[]): StoredTurn | undefined {
  let lastUser = -1;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const user = userStamp(messages[index]);
    if (user === undefined) continue;
    if (user.stamped) return storedTurnAt(messages, index);
    if (lastUser === -1) lastUser = index;
  }
  return lastUser === -1 ? undefined : storedTurnAt(messages, lastUser);
}
