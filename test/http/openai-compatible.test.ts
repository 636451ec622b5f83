import OpenAI, { AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type Api, type ApiOptions, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-openai-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

const KEYS = OWNER_AND_HELPER_KEYS;

/** Serves a kernel with `agents` spawned (talking to the scripted model server). */
async function open(options: ApiOptions, agents: string[]): Promise<Api> {
  api = await startApi(dir.path, options);
  for (const name of agents) await api.host.kernel.spawn(manifest(agentToml(name, model.url)));
  return api;
}

/** The official OpenAI client pointed at the daemon; no retries, so a 429 surfaces at once. */
const clientOf = (served: Api, apiKey = 'no-key-configured'): OpenAI => new OpenAI({ baseURL: `${served.url}/v1`, apiKey, maxRetries: 0 });

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** Every message text the model server was sent in its `index`th request. */
function modelMessagesOf(index: number): string {
  return JSON.stringify(model.requests[index]?.body['messages']);
}

describe('GET /v1/models', () => {
  it('lists every agent as a model named after it, created at its spawn time, owned by loom', async () => {
    const served = await open({}, ['alpha']);
    await served.host.clock.advance(5_000);
    await served.host.kernel.spawn(manifest(agentToml('beta', model.url)));
    const spawnedAt = (name: string): number => Math.floor(Date.parse(served.host.kernel.get(name).created_at) / 1000);

    const page = await clientOf(served).models.list();

    expect(page.data).toEqual([
      { id: 'alpha', object: 'model', created: spawnedAt('alpha'), owned_by: 'loom' },
      { id: 'beta', object: 'model', created: spawnedAt('beta'), owned_by: 'loom' },
    ]);
    expect(spawnedAt('beta') - spawnedAt('alpha')).toBe(5);
  });

  it("lists only the agents matching a user key's patterns", async () => {
    const served = await open(KEYS, ['helper-one', 'private', 'helper-two']);
    const page = await clientOf(served, 'helper-secret').models.list();
    expect(page.data.map((entry) => entry.id)).toEqual(['helper-one', 'helper-two']);
  });
});

describe('POST /v1/chat/completions without stream', () => {
  it("answers a chat.completion with the agent's reply and the turn's token usage", async () => {
    const served = await open({}, ['helper']);
    model.script([{ text: 'Hello from the agent.', usage: { inputTokens: 12, outputTokens: 4 } }]);

    const completion = await clientOf(served).chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'Hi' }] });

    expect(completion.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'helper',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the agent.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
    });
    expect(completion.created).toBe(Math.floor(served.host.clock.now() / 1000));
  });

  it('sends the agent only the last user message, text parts joined, and the agent keeps the conversation in its own session', async () => {
    const served = await open({}, ['helper']);
    model.script([{ text: 'first answer' }, { text: 'second answer' }]);
    const client = clientOf(served);

    await client.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'remember the word kiwi' }] });
    const second = await client.chat.completions.create({
      model: 'helper',
      messages: [
        { role: 'system', content: 'a client-side system prompt' },
        { role: 'user', content: 'an earlier client-side message' },
        { role: 'assistant', content: 'an earlier client-side reply' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'which word' },
            { type: 'text', text: 'did I say?' },
          ],
        },
      ],
    });

    expect(second.choices[0]?.message.content).toBe('second answer');
    const sent = modelMessagesOf(1);
    expect(sent).toContain('which word\\ndid I say?');
    // The history comes from the agent's session, not from the request.
    expect(sent).toContain('remember the word kiwi');
    expect(sent).toContain('first answer');
    expect(sent).not.toContain('client-side');
  });

  it('answers 400 (BadRequestError) and does not call the model when no message has the user role', async () => {
    const served = await open({}, ['helper']);
    const error = await rejectionOf(
      clientOf(served).chat.completions.create({ model: 'helper', messages: [{ role: 'system', content: 'only a system prompt' }] }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).status).toBe(400);
    expect((error as BadRequestError).message).toContain('"user"');
    expect(model.requests).toHaveLength(0);
  });

  it('answers 404 model_not_found (NotFoundError) when the model names no agent', async () => {
    const served = await open({}, ['helper']);
    const error = await rejectionOf(clientOf(served).chat.completions.create({ model: 'nobody', messages: [{ role: 'user', content: 'Hi' }] }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).status).toBe(404);
    expect((error as NotFoundError).code).toBe('model_not_found');
    expect((error as NotFoundError).message).toContain('nobody');
  });

  it("answers errors in OpenAI's shape { error: { message, type, code } }, for a bad body and an unknown /v1 route alike", async () => {
    const served = await open({}, ['helper']);
    const malformed = await served.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "helper",',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({
      error: { type: 'invalid_request_error', code: 'invalid_request', message: expect.stringContaining('malformed JSON') as string },
    });

    const noModel = await served.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(noModel.status).toBe(400);
    expect(((await noModel.json()) as { error: { message: string } }).error.message).toBe('invalid request body: model: missing, expected a string');
    const badContent = await served.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'helper', messages: [{ role: 'user', content: 5 }] }),
    });
    expect(badContent.status).toBe(400);
    expect(((await badContent.json()) as { error: { message: string } }).error.message).toContain(
      'messages[0].content: expected a string, an array of content parts',
    );

    const unknownRoute = await served.request('/v1/embeddings', { method: 'POST' });
    expect(unknownRoute.status).toBe(404);
    expect(await unknownRoute.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'unknown_url' } });
  });
});

describe('POST /v1/chat/completions with stream: true', () => {
  it('streams the reply as chat.completion.chunk deltas ending with finish_reason stop, and no usage unless asked', async () => {
    const served = await open({}, ['helper']);
    model.script([{ text: 'Streamed hello, chunk by chunk.' }]);

    const stream = await clientOf(served).chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Streamed hello, chunk by chunk.');
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'helper' && chunk.id === chunks[0]?.id)).toBe(true);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices[0]?.finish_reason === null)).toBe(true);
    expect(chunks.some((chunk) => chunk.usage !== undefined && chunk.usage !== null)).toBe(false);
  });

  it('ends with a usage chunk when stream_options.include_usage is set, and the raw stream ends with data: [DONE]', async () => {
    const served = await open({}, ['helper']);
    model.script([{ text: 'counted', usage: { inputTokens: 7, outputTokens: 3 } }, { text: 'raw' }]);

    const stream = await clientOf(served).chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');

    const raw = await served.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'helper', messages: [{ role: 'user', content: 'again' }], stream: true }),
    });
    expect(raw.headers.get('content-type')).toContain('text/event-stream');
    const lines = (await raw.text()).split('\n').filter((line) => line !== '');
    expect(lines.every((line) => line.startsWith('data: '))).toBe(true);
    expect(lines.at(-1)).toBe('data: [DONE]');
  });

  it('answers 404 NotFoundError before any stream opens when the model names no agent', async () => {
    const served = await open({}, ['helper']);
    const error = await rejectionOf(clientOf(served).chat.completions.create({ model: 'ghost', messages: [{ role: 'user', content: 'Hi' }], stream: true }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).code).toBe('model_not_found');
  });
});

describe('/v1 with API keys', () => {
  it('serves a valid key sent as the OpenAI client sends it (Authorization: Bearer)', async () => {
    const served = await open(KEYS, ['helper-one']);
    model.script([{ text: 'keyed reply' }]);
    const completion = await clientOf(served, 'admin-secret').chat.completions.create({ model: 'helper-one', messages: [{ role: 'user', content: 'Hi' }] });
    expect(completion.choices[0]?.message.content).toBe('keyed reply');
    expect(model.requests[0]?.headers['authorization']).not.toContain('admin-secret');
  });

  it('answers 401 invalid_api_key (AuthenticationError) for a wrong key, on both routes', async () => {
    const served = await open(KEYS, ['helper-one']);
    const client = clientOf(served, 'admin-secreT');
    const listing = await rejectionOf(client.models.list());
    const chat = await rejectionOf(client.chat.completions.create({ model: 'helper-one', messages: [{ role: 'user', content: 'Hi' }] }));
    for (const error of [listing, chat]) {
      expect(error).toBeInstanceOf(AuthenticationError);
      expect((error as AuthenticationError).status).toBe(401);
      expect((error as AuthenticationError).code).toBe('invalid_api_key');
    }
    expect(model.requests).toHaveLength(0);
  });

  it('answers 403 (PermissionDeniedError) when a user key asks for an agent outside its patterns, and does not call the model', async () => {
    const served = await open(KEYS, ['helper-one', 'private']);
    const error = await rejectionOf(
      clientOf(served, 'helper-secret').chat.completions.create({ model: 'private', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    );
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect((error as PermissionDeniedError).status).toBe(403);
    expect((error as PermissionDeniedError).message).toContain('private');
    expect(model.requests).toHaveLength(0);
  });
});

describe('/v1 rate limiting', () => {
  it('answers an agent over its hourly tokens with 429 and Retry-After, streamed or not', async () => {
    const served = await open({}, []);
    await served.host.kernel.spawn(manifest(agentToml('metered', model.url, '[resources]\nmax_tokens_per_hour = 10')));
    model.script([{ text: 'That used 15 tokens.' }]);
    await clientOf(served).chat.completions.create({ model: 'metered', messages: [{ role: 'user', content: 'Hi' }] });
    for (const stream of [false, true]) {
      const refused = await served.request('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'metered', stream, messages: [{ role: 'user', content: 'Again' }] }),
      });
      expect({ stream, status: refused.status }).toEqual({ stream, status: 429 });
      expect({ stream, retryAfter: Number(refused.headers.get('retry-after')) > 0 }).toEqual({ stream, retryAfter: true });
      expect(await refused.json()).toMatchObject({ error: { code: 'insufficient_quota' } });
    }
    expect(model.requests).toHaveLength(1);
  });

  it('charges a chat completion as a message (30 units) and answers 429 (RateLimitError) with Retry-After when the client is out of units', async () => {
    // 50 units a minute: one completion (30) fits, a second does not.
    const served = await open({ config: { rate_limit: { per_minute: 50, loopback: true } } }, ['helper']);
    model.script([{ text: 'once' }]);
    const client = clientOf(served);
    await client.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: '1' }] });
    const error = await rejectionOf(client.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: '2' }] }));
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).code).toBe('rate_limit_exceeded');
    // 30 units spent of 50; 30 more needs 10 back, 12 s at 50 a minute.
    expect((error as RateLimitError).headers.get('retry-after')).toBe('12');
    expect(model.requests).toHaveLength(1);
  });
});
