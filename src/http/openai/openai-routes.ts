import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Clock, Logger } from '../../contracts/index.ts';
import { LoomError } from '../../errors/index.ts';
import type { Kernel } from '../../kernel/index.ts';
import type { TurnResult } from '../../runtime/index.ts';
import { type HttpEnv, kernelOf } from '../http-context.ts';
import { readJsonBody } from '../request-input.ts';
import { idempotencyKeyOf } from '../idempotency-key.ts';
import { startTurnStream } from '../start-turn-stream.ts';
import { ChatCompletionRequestSchema, lastUserMessage, threadOf } from './chat-completion-request.ts';
import { toOpenAiErrorResponse } from './to-openai-error-response.ts';

/** What the OpenAI-compatible routes need. */
export interface OpenAiRoutesOptions {
  kernel: Kernel;
  /** `created` times are read from it. */
  clock: Clock;
  /** Logs mid-stream failures. */
  logger: Logger;
}

/** One entry of `GET /v1/models`: an agent. */
export interface OpenAiModel {
  id: string;
  object: 'model';
  /** Unix seconds of the agent's spawn. */
  created: number;
  owned_by: 'loom';
}

/** Token counts in OpenAI's words. */
export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The answer to a non-streamed `POST /v1/chat/completions`. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: [{ index: 0; message: { role: 'assistant'; content: string; refusal: null }; logprobs: null; finish_reason: 'stop' }];
  usage: OpenAiUsage;
}

/** One `data:` event of a streamed `POST /v1/chat/completions`. */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: { index: 0; delta: { role?: 'assistant'; content?: string }; logprobs: null; finish_reason: 'stop' | null }[];
  usage?: OpenAiUsage | null;
}

function usageOf(result: TurnResult): OpenAiUsage {
  const { inputTokens, outputTokens } = result.usage;
  return { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
}

/**
 * The OpenAI-compatible API, mounted at `/v1`, so any OpenAI client library can talk to an
 * agent: `GET /v1/models` lists the agents the key may reach (a model is an agent), and
 * `POST /v1/chat/completions` sends the agent named by `model` the text of the request's last
 * user message (see {@link lastUserMessage}) and answers a `chat.completion`, or with
 * `stream: true` `chat.completion.chunk` events ending in `data: [DONE]`. Auth, rate limits,
 * the body limit and the request timeout are the app's middleware, as for `/api`; errors are
 * answered in OpenAI's shape by {@link toOpenAiErrorResponse}.
 *
 * @example
 * const client = new OpenAI({ baseURL: 'http://127.0.0.1:4200/v1', apiKey: process.env.LOOM_API_KEY });
 * const reply = await client.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'Hi' }] });
 */
export function createOpenAiRoutes(options: OpenAiRoutesOptions): Hono<HttpEnv> {
  const { kernel, clock } = options;
  const logger = options.logger.child({ component: 'openai' });
  const routes = new Hono<HttpEnv>();
  const unixNow = (): number => Math.floor(clock.now() / 1000);

  routes.get('/models', (c) => {
    const data: OpenAiModel[] = kernelOf(c, kernel)
      .list()
      .map((agent) => ({ id: agent.name, object: 'model', created: Math.floor(Date.parse(agent.created_at) / 1000), owned_by: 'loom' }));
    return c.json({ object: 'list', data });
  });

  routes.post('/chat/completions', async (c) => {
    const caller = kernelOf(c, kernel);
    const request = await readJsonBody(c, ChatCompletionRequestSchema);
    const name = caller.agentName(request.model);
    caller.require('send messages', name);
    const message = lastUserMessage(request);
    const deadline = c.get('deadline');
    const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
    const created = unixNow();

    // A client's retry with the same `Idempotency-Key` gets the turn its first request started (decision 0045).
    const idempotencyKey = idempotencyKeyOf(c);
    const keyed = idempotencyKey === undefined ? {} : { idempotencyKey };
    if (request.stream !== true) {
      const result = await caller.send(name, message, { signal: deadline.signal, thread: threadOf(request), ...keyed });
      const body: ChatCompletion = {
        id,
        object: 'chat.completion',
        created,
        model: name,
        choices: [{ index: 0, message: { role: 'assistant', content: result.text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage: usageOf(result),
      };
      return c.json(body);
    }

    const includeUsage = request.stream_options?.include_usage === true;
    const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finishReason: 'stop' | null): ChatCompletionChunk => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: name,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });
    // The turn ends with its client (OpenAI's clients cancel a reply by closing the stream).
    const client = new AbortController();
    const signal = AbortSignal.any([deadline.signal, client.signal]);
    const { first, events } = await startTurnStream(caller, name, message, signal, { thread: threadOf(request), ...keyed });
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => client.abort(new Error('the client disconnected')));
      const write = async (data: unknown): Promise<void> => {
        if (!stream.aborted) await stream.writeSSE({ data: typeof data === 'string' ? data : JSON.stringify(data) });
      };
      try {
        // OpenAI opens a stream with the role and empty content.
        await write(chunk({ role: 'assistant', content: '' }, null));
        for (let next = first; next.done !== true; next = await events.next()) {
          const event = next.value;
          if (event.type === 'text-delta') {
            await write(chunk({ content: event.text }, null));
          } else if (event.type === 'run-finish') {
            await write(chunk({}, 'stop'));
            if (includeUsage)
              await write({
                id,
                object: 'chat.completion.chunk',
                created,
                model: name,
                choices: [],
                usage: usageOf(event.result),
              } satisfies ChatCompletionChunk);
            await write('[DONE]');
          } else if (event.type === 'error') {
            // OpenAI clients raise an error for a data event carrying `error`; no [DONE] follows.
            const error = new LoomError(event.code, event.category, event.message);
            await write(toOpenAiErrorResponse(error, clock.now(), logger).body);
          }
          // Tool calls, tool results and phases are the agent's own work, not part of the reply.
        }
      } finally {
        deadline.dispose();
      }
    });
  });

  return routes;
}
