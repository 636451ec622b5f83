import type { TraceStep, TurnRecord } from './chat-types.ts';
import { isErrorOutput, isRecord, outputText, toolNameOf } from './session.ts';

/** One thing shown in a turn, after the person's message. */
export type ChatItem =
  | { kind: 'text'; text: string }
  | {
      kind: 'tool';
      toolCallId: string;
      toolName: string;
      input: unknown;
      output: string | undefined;
      isError: boolean;
      durationMs: number | undefined;
      approval?: 'approved' | 'denied' | undefined;
    }
  /** How a turn that did not finish ended (the note Loom adds to the session). */
  | { kind: 'note'; status: 'cancelled' | 'failed'; text: string }
  /** A message Loom's loop added on the person's side (a "please continue", a loop-guard hint). */
  | { kind: 'aside'; text: string };

/** A turn of a stored session: the person's message, when it came, what followed, and its record. */
export interface ChatTurn {
  message: string;
  at: number | undefined;
  record: TurnRecord | undefined;
  items: ChatItem[];
}

type Loose = Record<string, unknown>;

type ToolStep = Extract<TraceStep, { kind: 'tool' }>;

/** Loom's metadata of a message or a part (`providerOptions.loom`). */
function loomOf(value: Loose): Loose | undefined {
  const options = value['providerOptions'];
  if (!isRecord(options)) return undefined;
  const loom = options['loom'];
  return isRecord(loom) ? loom : undefined;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((part): part is Loose => isRecord(part) && part['type'] === 'text' && typeof part['text'] === 'string')
    .map((part) => part['text'] as string)
    .join('\n\n');
}

function isTurnRecord(value: unknown): value is TurnRecord {
  return isRecord(value) && typeof value['status'] === 'string' && Array.isArray(value['steps']);
}

/**
 * Groups a stored session (AI SDK messages) into turns. A turn starts with a message from the
 * person: one Loom stamped (`providerOptions.loom.at`), or any user message in a session written
 * before Loom stamped them. Tool calls are paired with their results and given the durations
 * of the turn's trace; Loom's own notes and asides are told apart from what the agent said.
 */
export function toChatTurns(messages: readonly unknown[]): ChatTurn[] {
  const turns: ChatTurn[] = [];
  const tools = new Map<string, Extract<ChatItem, { kind: 'tool' }>>();
  let current: ChatTurn | undefined;
  const toolSteps = (turn: ChatTurn | undefined): Map<string, ToolStep> =>
    new Map((turn?.record?.steps ?? []).flatMap((step) => (step.kind === 'tool' ? [[step.toolCallId, step] as const] : [])));
  let timings = new Map<string, ToolStep>();
  const push = (item: ChatItem): void => {
    if (current === undefined) {
      current = { message: '', at: undefined, record: undefined, items: [] };
      turns.push(current);
    }
    current.items.push(item);
  };
  for (const message of messages) {
    if (!isRecord(message)) continue;
    const role = message['role'];
    const content = message['content'];
    if (role === 'user') {
      const loom = loomOf(message);
      const stamped = typeof loom?.['at'] === 'number';
      // In a stamped turn, an unstamped user message is the loop's, not the person's.
      if (!stamped && current?.at !== undefined) {
        push({ kind: 'aside', text: textOf(content) });
        continue;
      }
      current = {
        message: textOf(content),
        at: stamped ? (loom?.['at'] as number) : undefined,
        record: isTurnRecord(loom?.['turn']) ? loom['turn'] : undefined,
        items: [],
      };
      turns.push(current);
      timings = toolSteps(current);
      continue;
    }
    if (typeof content === 'string') {
      if (role === 'assistant' && content.trim() !== '') push({ kind: 'text', text: content });
      continue;
    }
    if (!Array.isArray(content)) continue;
    for (const part of content as unknown[]) {
      if (!isRecord(part)) continue;
      const type = part['type'];
      const toolCallId = typeof part['toolCallId'] === 'string' ? part['toolCallId'] : '';
      const toolName = toolNameOf(part);
      if (type === 'text' && typeof part['text'] === 'string') {
        const note = loomOf(part)?.['note'];
        if (note === 'cancelled' || note === 'failed') push({ kind: 'note', status: note, text: part['text'] });
        else if (part['text'].trim() !== '') push({ kind: 'text', text: part['text'] });
      } else if (type === 'tool-call') {
        const step = timings.get(toolCallId);
        const item: ChatItem = {
          kind: 'tool',
          toolCallId,
          toolName,
          input: part['input'] ?? part['args'],
          output: undefined,
          isError: false,
          durationMs: step?.durationMs,
          approval: step?.approval,
        };
        tools.set(toolCallId, item);
        push(item);
      } else if (type === 'tool-result') {
        const output = outputText(part['output'] ?? part['result'], 2);
        const isError = isErrorOutput(part['output']);
        const call = tools.get(toolCallId);
        if (call === undefined)
          push({ kind: 'tool', toolCallId, toolName, input: undefined, output, isError, durationMs: timings.get(toolCallId)?.durationMs });
        else Object.assign(call, { output, isError });
      }
    }
  }
  return turns;
}
