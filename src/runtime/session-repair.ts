import type { AssistantModelMessage, ModelMessage, TextPart, ToolCallPart, ToolModelMessage, ToolResultPart, UserModelMessage } from 'ai';

// The seven phases live together with repairSession() rather than one file each: they share
// small helpers, are only meaningful in this order, and are exported separately so each can
// be tested alone.

/** Text of the synthetic error result given to a tool call that never got a result. */
export const INTERRUPTED_TOOL_CALL_TEXT = 'tool call interrupted';
/** Text of the user message put in front of a history that would otherwise start with the assistant. */
export const CONVERSATION_CONTINUES_TEXT = '[The conversation continues from an earlier session.]';
/** Text of the user message put in front of a history cut to fit the context window mid-turn. */
export const HISTORY_TRUNCATED_TEXT = '[Earlier messages were removed to fit the context window.]';
/** Characters per token assumed by {@link estimateMessageTokens}. */
export const CHARS_PER_TOKEN = 4;

/** What one repair phase returns: the repaired history and how many things it changed. */
export interface RepairPhaseResult {
  messages: ModelMessage[];
  /** Parts or messages dropped, added, merged or rewritten; 0 when the phase found nothing. */
  changed: number;
}

/** Options for {@link repairSession} and {@link truncateToContextWindow}. */
export interface SessionRepairOptions {
  /** The model's context window in tokens; without it, nothing is truncated. */
  maxContextTokens?: number;
  /** Estimates one message's tokens; defaults to {@link estimateMessageTokens}. */
  estimateTokens?: (message: ModelMessage) => number;
  /**
   * How many leading messages are known to make a well-formed history on their own (an earlier
   * repair found them so, see {@link SessionRepairResult.wellFormed}): only what follows them is
   * checked, so a turn does not check its whole session again.
   */
  wellFormedPrefix?: number;
  /** The estimated tokens of the history's first messages, when known: only the rest is estimated. */
  knownTokens?: KnownTokens;
}

/** What is known of a history's first `count` messages: they estimate to `tokens` tokens. */
export interface KnownTokens {
  count: number;
  tokens: number;
}

/**
 * The estimated tokens of a history: `known.tokens` for its first `known.count` messages (when
 * they are still there), plus each later message's estimate.
 */
export function estimateHistoryTokens(
  messages: readonly ModelMessage[],
  known?: KnownTokens,
  estimateTokens: (message: ModelMessage) => number = estimateMessageTokens,
): number {
  const from = known === undefined || known.count > messages.length ? 0 : known.count;
  let total = from === 0 ? 0 : (known?.tokens ?? 0);
  for (let index = from; index < messages.length; index += 1) total += estimateTokens(messages[index] as ModelMessage);
  return total;
}

/** The repaired history and, per phase in the order run, how many things it changed. */
export interface SessionRepairResult {
  messages: ModelMessage[];
  report: { phase: string; changed: number }[];
  /** Whether the history was found well formed, so that phases 1-6 left it as it was. */
  wellFormed: boolean;
}

type Phase = { name: string; run: (messages: readonly ModelMessage[]) => RepairPhaseResult };

/**
 * Repairs a stored session history so providers accept it, running the seven phases of
 * the kernel spec in order: {@link dropOrphanedToolResults}, {@link removeEmptyMessages},
 * {@link mergeConsecutiveSameRole}, {@link validateContentBlocks},
 * {@link fixToolCallReferences}, {@link ensureAlternation} and
 * {@link truncateToContextWindow}. Runs before each agent loop iteration.
 *
 * Pure: the input array and its messages are never mutated; unchanged messages are shared
 * with the result. Never throws for malformed history; it drops what it cannot repair.
 *
 * @example
 * const { messages, report } = repairSession(history, { maxContextTokens: 200_000 });
 * const changed = report.filter((entry) => entry.changed > 0);
 */
export function repairSession(messages: readonly ModelMessage[], options: SessionRepairOptions = {}): SessionRepairResult {
  const phases: Phase[] = [
    { name: 'drop-orphaned-tool-results', run: dropOrphanedToolResults },
    { name: 'remove-empty-messages', run: removeEmptyMessages },
    { name: 'merge-consecutive-same-role', run: mergeConsecutiveSameRole },
    { name: 'validate-content-blocks', run: validateContentBlocks },
    { name: 'fix-tool-call-references', run: fixToolCallReferences },
    { name: 'ensure-alternation', run: ensureAlternation },
    { name: 'truncate-to-context-window', run: (current) => truncateToContextWindow(current, options) },
  ];
  // A history that is already well formed (the common case: Loom wrote it) skips phases 1-6,
  // which would each copy it to change nothing.
  if (isWellFormed(messages, options.wellFormedPrefix)) {
    const truncated = truncateToContextWindow(messages, options);
    return {
      messages: truncated.messages,
      report: phases.map((phase, index) => ({ phase: phase.name, changed: index === phases.length - 1 ? truncated.changed : 0 })),
      wellFormed: true,
    };
  }
  let current: ModelMessage[] = [...messages];
  const report: SessionRepairResult['report'] = [];
  for (const phase of phases) {
    const result = phase.run(current);
    current = result.messages;
    report.push({ phase: phase.name, changed: result.changed });
  }
  return { messages: current, report, wellFormed: false };
}

/**
 * Whether phases 1-6 would leave the history as it is. Conservative: it may say no for a
 * history the phases would not change (approval requests, provider-executed calls), never yes
 * for one they would. One pass, no copies. With `from`, the first `from` messages are taken to
 * be a well-formed history already (one this function said yes to) and only the rest is read.
 */
export function isWellFormed(messages: readonly ModelMessage[], from = 0): boolean {
  const start = Math.max(0, Math.min(from, messages.length));
  // A well-formed history never ends in unanswered tool calls, so the messages after it start
  // fresh: only the role before them matters (and a history of system messages alone has not started).
  let previousRole: string | undefined = start === 0 ? undefined : (messages[start - 1] as { role?: string }).role;
  let started = previousRole !== undefined && previousRole !== 'system';
  for (let index = start; index < messages.length; index += 1) {
    const message = messages[index] as unknown;
    if (!isRecord(message) || typeof message.role !== 'string' || !Object.hasOwn(ALLOWED_PARTS, message.role)) return false;
    const role = message.role as ModelMessage['role'];
    const content = message.content;
    if (role === previousRole || isEmptyContent(content)) return false;
    previousRole = role;
    if (role === 'system') {
      if (started || typeof content !== 'string') return false;
      continue;
    }
    if (!started && role !== 'user') return false;
    started = true;
    if (typeof content === 'string') {
      if (role === 'tool') return false;
      continue;
    }
    if (!Array.isArray(content)) return false;
    const parts = content as unknown[];
    if (!parts.every((part) => isValidPart(part, ALLOWED_PARTS[role]))) return false;
    if (role === 'tool') return false; // a tool message only stands right after its assistant turn, handled below
    if (role !== 'assistant') continue;
    const calls = parts as Loose[];
    if (calls.some((part) => part.type === 'tool-result' || part.type === 'tool-approval-request' || part.providerExecuted === true)) return false;
    const ids = calls.filter((part) => part.type === 'tool-call').map((part) => part.toolCallId as string);
    if (ids.length === 0) continue;
    if (ids.includes('') || new Set(ids).size !== ids.length) return false;
    const next = messages[index + 1] as unknown;
    if (!isRecord(next) || next.role !== 'tool' || !Array.isArray(next.content) || next.content.length !== ids.length) return false;
    const answered = new Set<string>();
    for (const part of next.content as unknown[]) {
      if (!isValidPart(part, ALLOWED_PARTS.tool) || (part as Loose).type !== 'tool-result') return false;
      const id = (part as Loose).toolCallId as string;
      if (!ids.includes(id) || answered.has(id)) return false;
      answered.add(id);
    }
    index += 1;
    previousRole = 'tool';
  }
  return true;
}

/**
 * Phase 1: drops tool results whose tool call does not appear earlier in the history, and
 * second results for a call already answered. Looks at tool messages and at results inside
 * assistant messages (provider-executed tools). A message left without parts is removed by
 * phase 2.
 */
export function dropOrphanedToolResults(messages: readonly ModelMessage[]): RepairPhaseResult {
  const called = new Set<string>();
  const answered = new Set<string>();
  let changed = 0;
  const keepResult = (part: ToolResultPart): boolean => {
    if (!called.has(part.toolCallId) || answered.has(part.toolCallId)) {
      changed += 1;
      return false;
    }
    answered.add(part.toolCallId);
    return true;
  };
  const out = messages.map((message): ModelMessage => {
    if (message.role === 'assistant' && Array.isArray(message.content)) {
      const content = message.content.filter((part) => {
        if (isMalformed(part)) return true; // phase 4's job
        if (part.type === 'tool-call') called.add(part.toolCallId);
        return part.type === 'tool-result' ? keepResult(part) : true;
      });
      return content.length === message.content.length ? message : { ...message, content };
    }
    if (message.role === 'tool' && Array.isArray(message.content)) {
      const content = message.content.filter((part) => (!isMalformed(part) && part.type === 'tool-result' ? keepResult(part) : true));
      return content.length === message.content.length ? message : { ...message, content };
    }
    return message;
  });
  return { messages: out, changed };
}

/**
 * Phase 2: removes messages with nothing in them: empty or whitespace-only text, no parts,
 * only whitespace-only text parts, or no content at all.
 */
export function removeEmptyMessages(messages: readonly ModelMessage[]): RepairPhaseResult {
  const out = messages.filter((message) => !isEmptyContent((message as { content?: unknown }).content));
  return { messages: out, changed: messages.length - out.length };
}

/**
 * Phase 3: merges each run of consecutive messages with the same role into one. Two
 * strings join with a blank line; otherwise the parts are concatenated in order (a string
 * becomes a text part). Consecutive tool messages answer the same assistant turn (nothing
 * sits between them), so merging them is safe. The merged message keeps the first
 * message's `providerOptions`.
 */
export function mergeConsecutiveSameRole(messages: readonly ModelMessage[]): RepairPhaseResult {
  const out: ModelMessage[] = [];
  let changed = 0;
  for (const message of messages) {
    const last = out.at(-1);
    const merged = last === undefined ? undefined : mergeTwo(last, message);
    if (merged === undefined) {
      out.push(message);
    } else {
      out[out.length - 1] = merged;
      changed += 1;
    }
  }
  return { messages: out, changed };
}

/**
 * Phase 4: drops content parts a provider would reject: parts of a type the message's role
 * cannot carry or does not exist, parts missing a required field (a tool call's id or
 * name, a tool result's output, a file's media type, …) and empty text parts, which
 * Anthropic refuses. Drops messages with an unknown role or malformed content, and messages
 * the phase left without parts. `changed` counts parts and messages dropped.
 */
export function validateContentBlocks(messages: readonly ModelMessage[]): RepairPhaseResult {
  const out: ModelMessage[] = [];
  let changed = 0;
  for (const message of messages as readonly unknown[]) {
    if (!isRecord(message) || typeof message.role !== 'string' || !Object.hasOwn(ALLOWED_PARTS, message.role)) {
      changed += 1;
      continue;
    }
    const role = message.role as ModelMessage['role'];
    const content = message.content;
    if (typeof content === 'string') {
      if (role === 'tool') changed += 1;
      else out.push(message as ModelMessage);
      continue;
    }
    if (role === 'system' || !Array.isArray(content)) {
      changed += 1;
      continue;
    }
    const allowed = ALLOWED_PARTS[role];
    const kept = (content as unknown[]).filter((part) => isValidPart(part, allowed));
    changed += content.length - kept.length;
    if (kept.length === content.length) {
      out.push(message as ModelMessage);
    } else if (kept.length === 0) {
      changed += 1;
    } else {
      out.push({ ...message, content: kept } as ModelMessage);
    }
  }
  return { messages: out, changed };
}

/**
 * Phase 5: makes every tool call and result refer to each other, as providers require.
 * After an assistant message with tool calls, the next message must be a tool message that
 * answers each call: results there that answer no call of that assistant message (a
 * missing, empty or unknown id, or a duplicate) are dropped, and each unanswered call gets
 * a synthetic error result, {@link INTERRUPTED_TOOL_CALL_TEXT}, in a tool message inserted
 * when there is none. Tool calls with an empty id, which nothing can answer, are dropped.
 * A tool message that does not follow an assistant message is dropped. Provider-executed
 * calls need no tool message, and a call awaiting approval in the last assistant message
 * is left for the approval flow.
 */
export function fixToolCallReferences(messages: readonly ModelMessage[]): RepairPhaseResult {
  const out: ModelMessage[] = [];
  let changed = 0;
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as ModelMessage;
    if (message.role === 'tool') {
      changed += message.content.length; // nothing asked for these results
      continue;
    }
    if (message.role !== 'assistant' || typeof message.content === 'string') {
      out.push(message);
      continue;
    }
    const content = message.content.filter((part) => !((part.type === 'tool-call' || part.type === 'tool-result') && part.toolCallId === ''));
    changed += message.content.length - content.length;
    out.push(content.length === message.content.length ? message : { ...message, content });

    const calls = content.filter((part): part is ToolCallPart => part.type === 'tool-call');
    const awaitingApproval = new Set(
      index === lastAssistant ? content.flatMap((part) => (part.type === 'tool-approval-request' ? [part.toolCallId] : [])) : [],
    );
    const callIds = new Set(calls.map((call) => call.toolCallId));
    const next = messages[index + 1];
    const results: ToolModelMessage['content'] = [];
    const answered = new Set<string>();
    if (next?.role === 'tool') {
      index += 1;
      for (const part of next.content) {
        if (part.type === 'tool-result' && (!callIds.has(part.toolCallId) || answered.has(part.toolCallId))) {
          changed += 1;
          continue;
        }
        if (part.type === 'tool-result') answered.add(part.toolCallId);
        results.push(part);
      }
    }
    for (const call of calls) {
      if (call.providerExecuted === true || answered.has(call.toolCallId) || awaitingApproval.has(call.toolCallId)) {
        continue;
      }
      results.push(interruptedResult(call));
      changed += 1;
    }
    if (results.length === 0) continue;
    if (next?.role !== 'tool') {
      out.push({ role: 'tool', content: results });
    } else {
      const unchanged = results.length === next.content.length && results.every((part, at) => part === next.content[at]);
      out.push(unchanged ? next : { ...next, content: results });
    }
  }
  return { messages: out, changed };
}

/**
 * Phase 6: makes the history follow the user/assistant pattern providers expect. System
 * messages are allowed only at the start; a later one becomes a user message with the same
 * text. The first message after them must be from the user; when it is not, a user message
 * saying {@link CONVERSATION_CONTINUES_TEXT} is put in front. Same-role neighbours that
 * earlier phases created are merged. Assumes phase 5 has already paired tool messages
 * with assistant turns.
 */
export function ensureAlternation(messages: readonly ModelMessage[]): RepairPhaseResult {
  const out: ModelMessage[] = [];
  let changed = 0;
  let started = false;
  for (const message of messages) {
    if (message.role === 'system') {
      if (started) {
        out.push({ role: 'user', content: message.content });
        changed += 1;
      } else {
        out.push(message);
      }
      continue;
    }
    if (!started && message.role !== 'user') {
      out.push({ role: 'user', content: CONVERSATION_CONTINUES_TEXT });
      changed += 1;
    }
    started = true;
    out.push(message);
  }
  const merged = mergeConsecutiveSameRole(out);
  return { messages: merged.messages, changed: changed + merged.changed };
}

/**
 * Phase 7: when the estimated tokens exceed `maxContextTokens`, drops the oldest messages
 * until the rest fits, keeping leading system messages. It cuts only before a user or an
 * assistant message, never before a tool message, so a tool call is never separated from
 * its result; a cut before an assistant message puts a user message saying
 * {@link HISTORY_TRUNCATED_TEXT} in front. When even the newest turn does not fit, that turn
 * is kept anyway, over budget. `changed` counts messages dropped and inserted.
 */
export function truncateToContextWindow(messages: readonly ModelMessage[], options: SessionRepairOptions = {}): RepairPhaseResult {
  const { maxContextTokens, estimateTokens = estimateMessageTokens } = options;
  if (maxContextTokens === undefined) return { messages: [...messages], changed: 0 };
  const total = estimateHistoryTokens(messages, options.knownTokens, estimateTokens);
  if (total <= maxContextTokens) return { messages: [...messages], changed: 0 };
  const costs = messages.map((message) => estimateTokens(message));

  let head = 0;
  while (messages[head]?.role === 'system') head += 1;
  const headCost = sum(costs.slice(0, head));
  const marker: UserModelMessage = { role: 'user', content: HISTORY_TRUNCATED_TEXT };
  const markerCost = estimateTokens(marker);

  let cut: number | undefined;
  let tailCost = total - headCost;
  for (let index = head; index < messages.length; index += 1) {
    tailCost -= costs[index] ?? 0;
    const start = index + 1;
    const role = messages[start]?.role;
    if (role !== 'user' && role !== 'assistant') continue;
    cut = start;
    if (headCost + tailCost + (role === 'assistant' ? markerCost : 0) <= maxContextTokens) break;
  }
  if (cut === undefined) return { messages: [...messages], changed: 0 };
  const needsMarker = messages[cut]?.role === 'assistant';
  const out = [...messages.slice(0, head), ...(needsMarker ? [marker] : []), ...messages.slice(cut)];
  return { messages: out, changed: cut - head + (needsMarker ? 1 : 0) };
}

// Messages are never mutated (repairs make new ones), so a message's estimate can be kept.
const tokenEstimates = new WeakMap<object, number>();

/**
 * Estimates a message's tokens at {@link CHARS_PER_TOKEN} characters per token of its text
 * (string content) or of its parts as JSON, rounded up. Crude but provider-neutral. Remembered
 * per message object, since the loop asks again on every iteration.
 */
export function estimateMessageTokens(message: ModelMessage): number {
  const known = tokenEstimates.get(message);
  if (known !== undefined) return known;
  const content = (message as { content?: unknown }).content;
  let chars = 0;
  if (typeof content === 'string') {
    chars = content.length;
  } else if (Array.isArray(content)) {
    // Text parts are counted by their text; other parts (tool calls, results) by their JSON.
    for (const part of content as unknown[]) chars += partChars(part);
  } else {
    chars = jsonChars(content);
  }
  const estimate = Math.ceil(chars / CHARS_PER_TOKEN);
  tokenEstimates.set(message, estimate);
  return estimate;
}

function jsonChars(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0; // unserializable content (a bigint, a cycle): count it as nothing
  }
}

function partChars(part: unknown): number {
  if (typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text') {
    const text = (part as { text?: unknown }).text;
    if (typeof text === 'string') return text.length;
  }
  return jsonChars(part);
}

const ALLOWED_PARTS: Record<ModelMessage['role'], readonly string[]> = {
  system: [],
  user: ['text', 'image', 'file'],
  assistant: ['text', 'file', 'reasoning', 'reasoning-file', 'tool-call', 'tool-result', 'tool-approval-request', 'custom'],
  tool: ['tool-result', 'tool-approval-response'],
};

const PART_FIELDS: Record<string, (part: Loose) => boolean> = {
  text: (part) => typeof part.text === 'string' && part.text !== '',
  image: (part) => part.image !== undefined && part.image !== null,
  file: (part) => part.data !== undefined && part.data !== null && typeof part.mediaType === 'string',
  reasoning: (part) => typeof part.text === 'string',
  'reasoning-file': (part) => part.data !== undefined && part.data !== null && typeof part.mediaType === 'string',
  'tool-call': (part) => typeof part.toolCallId === 'string' && typeof part.toolName === 'string' && part.toolName !== '',
  'tool-result': (part) => typeof part.toolCallId === 'string' && typeof part.toolName === 'string' && isValidOutput(part.output),
  'tool-approval-request': (part) => typeof part.approvalId === 'string' && typeof part.toolCallId === 'string',
  'tool-approval-response': (part) => typeof part.approvalId === 'string' && typeof part.approved === 'boolean',
  custom: (part) => typeof part.kind === 'string',
};

function isValidPart(part: unknown, allowed: readonly string[]): boolean {
  if (!isRecord(part) || typeof part.type !== 'string' || !allowed.includes(part.type)) return false;
  return PART_FIELDS[part.type]?.(part) ?? false;
}

function isValidOutput(output: unknown): boolean {
  if (!isRecord(output)) return false;
  switch (output.type) {
    case 'text':
    case 'error-text':
      return typeof output.value === 'string';
    case 'json':
    case 'error-json':
      return output.value !== undefined;
    case 'execution-denied':
      return true;
    case 'content':
      return Array.isArray(output.value);
    default:
      return false;
  }
}

function isEmptyContent(content: unknown): boolean {
  if (typeof content === 'string') return content.trim() === '';
  if (!Array.isArray(content)) return true;
  return content.every((part) => isRecord(part) && part.type === 'text' && typeof part.text === 'string' && part.text.trim() === '');
}

function mergeTwo(first: ModelMessage, second: ModelMessage): ModelMessage | undefined {
  if (first.role === 'system' && second.role === 'system') {
    return { ...first, content: `${first.content}\n\n${second.content}` };
  }
  if (first.role === 'user' && second.role === 'user') {
    return { ...first, content: mergeContent(first.content, second.content) };
  }
  if (first.role === 'assistant' && second.role === 'assistant') {
    return { ...first, content: mergeContent(first.content, second.content) } satisfies AssistantModelMessage;
  }
  if (first.role === 'tool' && second.role === 'tool') {
    return { ...first, content: [...first.content, ...second.content] };
  }
  return undefined;
}

function mergeContent<Part>(first: string | Part[], second: string | Part[]): string | (Part | TextPart)[] {
  if (typeof first === 'string' && typeof second === 'string') return `${first}\n\n${second}`;
  return [...toParts(first), ...toParts(second)];
}

function toParts<Part>(content: string | Part[]): (Part | TextPart)[] {
  if (typeof content !== 'string') return Array.isArray(content) ? content : [];
  return content === '' ? [] : [{ type: 'text', text: content }];
}

function interruptedResult(call: ToolCallPart): ToolResultPart {
  return {
    type: 'tool-result',
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    output: { type: 'error-text', value: INTERRUPTED_TOOL_CALL_TEXT },
  };
}

/** The fields the repair phases read from parts and messages of unknown shape. */
type Loose = {
  [
    Key in
      | 'role'
      | 'content'
      | 'type'
      | 'text'
      | 'image'
      | 'data'
      | 'mediaType'
      | 'toolCallId'
      | 'toolName'
      | 'output'
      | 'approvalId'
      | 'approved'
      | 'kind'
      | 'value'
      | 'providerExecuted'
  ]?: unknown;
};

function isRecord(value: unknown): value is Loose {
  return typeof value === 'object' && value !== null;
}

// Not a type guard on purpose: narrowing the AI SDK part unions by `Loose` would drop the
// interface members (they lack an index signature) from the union.
function isMalformed(value: unknown): boolean {
  return typeof value !== 'object' || value === null;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
