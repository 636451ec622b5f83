import { safeParseJson } from '../validation/index.ts';

/** A tool call a model wrote as text, read back: the tool's name and its input. */
export interface TextToolCall {
  toolName: string;
  input: Record<string, unknown>;
}

/** What {@link parseTextToolCalls} found: the calls, and the text around them (trimmed; may be empty). */
export interface ParsedTextToolCalls {
  calls: TextToolCall[];
  text: string;
}

/**
 * The markers local models put before a tool call they write as text: Qwen and Hermes
 * (`<tool_call>…</tool_call>`), Llama 3.1 (`<|python_tag|>`), Mistral (`[TOOL_CALLS]`).
 */
export const TOOL_CALL_MARKERS = ['<tool_call>', '<|python_tag|>', '[TOOL_CALLS]'] as const;

/** The most characters of a reply read for text tool calls: a longer reply is prose, not a call. */
export const MAX_CALL_TEXT = 100_000;

/**
 * Reads the tool calls a model wrote as text instead of as tool calls, as local models served by
 * Ollama, vLLM, LM Studio or llama.cpp without a tool-call parser do: `<tool_call>{"name": …,
 * "arguments": {…}}</tool_call>` (one or more), `<|python_tag|>{"name": …, "parameters": {…}}`,
 * `[TOOL_CALLS][{…}]`, or a reply that is nothing but such JSON (bare or in a ```json fence).
 *
 * Every call must name one of `toolNames` and carry an object (or a JSON string of one) as its
 * `arguments` or `parameters`; otherwise the reply is left as the model wrote it and this returns
 * undefined, so prose that merely shows JSON is never run. A key written twice counts as
 * `JSON.parse` reads it: the last.
 *
 * @example
 * parseTextToolCalls('<tool_call>{"name":"weather","arguments":{"city":"Oslo"}}</tool_call>', new Set(['weather']));
 * // → { calls: [{ toolName: 'weather', input: { city: 'Oslo' } }], text: '' }
 */
export function parseTextToolCalls(reply: string, toolNames: ReadonlySet<string>): ParsedTextToolCalls | undefined {
  if (toolNames.size === 0 || reply.length > MAX_CALL_TEXT) return undefined;
  const tagged = taggedCalls(reply, toolNames);
  if (tagged !== null) return tagged;
  const whole = /^\s*(?:```(?:json)?\s*([\s\S]*?)\s*```|([[{][\s\S]*))\s*$/.exec(reply);
  const json = whole?.[1] ?? whole?.[2];
  if (json === undefined) return undefined;
  const calls = callsOf(json, toolNames);
  return calls === undefined ? undefined : { calls, text: '' };
}

/**
 * The calls after the markers in `reply`, with the text before the first marker; null when there
 * is no marker, undefined when a marked call does not read as one.
 */
function taggedCalls(reply: string, toolNames: ReadonlySet<string>): ParsedTextToolCalls | undefined | null {
  const start = firstMarker(reply);
  if (start === -1) return null;
  const calls: TextToolCall[] = [];
  const outside: string[] = [reply.slice(0, start)];
  // Each piece starts after a marker; the `<tool_call>` form closes each call, and may say more after it.
  const pieces = reply
    .slice(start)
    .split(/<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]/)
    .slice(1);
  for (const piece of pieces) {
    const close = piece.indexOf('</tool_call>');
    const body = (close === -1 ? piece : piece.slice(0, close)).replace(/<\|eom_id\|>|<\|eot_id\|>/g, '');
    const found = callsOf(body, toolNames);
    if (found === undefined) return undefined;
    calls.push(...found);
    if (close !== -1) outside.push(piece.slice(close + '</tool_call>'.length));
  }
  return calls.length === 0 ? undefined : { calls, text: outside.join('').trim() };
}

/** Where the first tool-call marker in `text` starts, or -1. */
export function firstMarker(text: string): number {
  const at = TOOL_CALL_MARKERS.map((marker) => text.indexOf(marker)).filter((index) => index !== -1);
  return at.length === 0 ? -1 : Math.min(...at);
}

/**
 * The calls in one JSON text: an object or an array of objects, each naming an offered tool; undefined
 * when it is not one. `wholeCallReader` asks it of each call as a streamed reply closes it.
 */
export function callsOf(json: string, toolNames: ReadonlySet<string>): TextToolCall[] | undefined {
  const parsed = safeParseJson(json.trim());
  if (!parsed.ok) return undefined;
  const items = Array.isArray(parsed.value) ? (parsed.value as unknown[]) : [parsed.value];
  const calls: TextToolCall[] = [];
  for (const item of items) {
    const call = callOf(item, toolNames);
    if (call === undefined) return undefined;
    calls.push(call);
  }
  return calls.length === 0 ? undefined : calls;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One call: `{ name, arguments | parameters }`, or OpenAI's own `{ function: { name, arguments } }`. */
function callOf(item: unknown, toolNames: ReadonlySet<string>): TextToolCall | undefined {
  if (!isRecord(item)) return undefined;
  const fields = isRecord(item['function']) ? item['function'] : item;
  const name = fields['name'];
  if (typeof name !== 'string' || !toolNames.has(name)) return undefined;
  let input: unknown = fields['arguments'] ?? fields['parameters'] ?? {};
  if (typeof input === 'string') {
    const parsed = safeParseJson(input);
    if (!parsed.ok) return undefined;
    input = parsed.value;
  }
  return isRecord(input) ? { toolName: name, input } : undefined;
}
