import { z } from 'zod';
import { HttpRequestError } from '../../errors/index.ts';

/** A part of a message's content; only `text` parts carry text, others (images, audio) are skipped. */
const ContentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

/** One message of the request: a role and its content (a string, text parts, or null for an assistant's tool calls). */
const ChatMessageSchema = z.looseObject({
  role: z.string().min(1),
  content: z
    .union([z.string(), z.array(ContentPartSchema), z.null()], { error: 'expected a string, an array of content parts ({"type": "text", "text": …}) or null' })
    .optional(),
});

/**
 * The body of `POST /v1/chat/completions`, validated loosely: `model` and `messages` are
 * required; `stream`, `stream_options.include_usage` and `user` (the conversation within the
 * key's own: each `user` has a session of its own) are read; every other field of the
 * OpenAI request (temperature, tools, n, …) is accepted and ignored, since the agent's
 * manifest decides its model and settings.
 */
export const ChatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1, { error: 'expected the name of an agent' }),
  messages: z.array(ChatMessageSchema).min(1, { error: 'expected at least one message' }),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  user: z.string().min(1).max(256).nullish(),
});

/** The conversation a request belongs to within its key's: `v1`, or `v1:<user>` when it names its end user. */
export function threadOf(request: ChatCompletionRequest): string {
  return request.user === null || request.user === undefined ? 'v1' : `v1:${request.user}`;
}

/** A validated chat completion request. */
export type ChatCompletionRequest = z.output<typeof ChatCompletionRequestSchema>;

/** The text of a message's content: the string itself, or its text parts joined by newlines. */
function textOf(content: ChatCompletionRequest['messages'][number]['content']): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  return content
    .filter((part) => part.type === 'text' && part.text !== undefined)
    .map((part) => part.text)
    .join('\n');
}

/**
 * The message the agent receives: the text of the LAST `user` message. Earlier messages are
 * ignored, because the agent keeps its own session history and that history is the source of
 * truth; replaying the client's copy would duplicate it. System messages are ignored too: the
 * agent's manifest holds its system prompt.
 * @throws {HttpRequestError} `INVALID_REQUEST` when there is no user message, or it has no text.
 */
export function lastUserMessage(request: ChatCompletionRequest): string {
  const last = request.messages.findLast((message) => message.role === 'user');
  if (last === undefined)
    throw new HttpRequestError(
      'INVALID_REQUEST',
      'invalid request body: messages: expected at least one message with role "user"; the agent is sent the last one',
    );
  const text = textOf(last.content);
  if (text.trim() === '')
    throw new HttpRequestError('INVALID_REQUEST', 'invalid request body: messages: the last "user" message has no text (only text content is supported)');
  return text;
}
