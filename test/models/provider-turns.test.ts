import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createModelResolver, type ModelTarget } from '../../src/models/index.ts';
import { startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.ts';

const ENV = { OPENAI_API_KEY: 'sk-openai-test', ANTHROPIC_API_KEY: 'sk-ant-test', GROQ_API_KEY: 'gsk-test' };

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.reset();
});

afterEach(() => {
  // Every scripted step was used: a model call the code under test should have made, and did not, fails here.
  expect(server.remaining()).toBe(0);
});

const resolver = createModelResolver({ env: ENV });
const targets: Record<string, () => ModelTarget> = {
  openai: () => ({ provider: 'openai', model: 'gpt-4o-mini', base_url: server.url }),
  groq: () => ({ provider: 'groq', model: 'llama-3.3-70b-versatile', base_url: server.url }),
  anthropic: () => ({ provider: 'anthropic', model: 'claude-haiku-4-5', base_url: server.url }),
};

describe.each(Object.keys(targets))('the real %s provider against the scripted server', (name) => {
  const target = (): ModelTarget => targets[name]!();

  it('generateText() returns the scripted text and usage, and sends the prompt and model', async () => {
    server.script([{ text: 'Hello from the script.', usage: { inputTokens: 12, outputTokens: 4 } }]);
    const result = await generateText({ model: resolver.resolve(target()), prompt: 'Say hello', maxRetries: 0 });
    expect(result.text).toBe('Hello from the script.');
    expect(result.usage.inputTokens).toBe(12);
    expect(result.usage.outputTokens).toBe(4);
    expect(result.finishReason).toBe('stop');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body['model']).toBe(target().model);
    expect(JSON.stringify(server.requests[0]!.body['messages'])).toContain('Say hello');
  });

  it('streamText() streams the scripted text in several deltas and reports usage', async () => {
    server.script([{ text: 'one two three four', usage: { inputTokens: 7, outputTokens: 9 } }]);
    const result = streamText({ model: resolver.resolve(target()), prompt: 'Count', maxRetries: 0 });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.join('')).toBe('one two three four');
    expect(deltas.length).toBeGreaterThan(1);
    expect((await result.usage).outputTokens).toBe(9);
    expect(await result.finishReason).toBe('stop');
    expect(server.requests[0]!.body['stream']).toBe(true);
  });

  it('generateText() runs a tool the model calls and sends its result back in the next request', async () => {
    server.script([{ toolCalls: [{ name: 'weather', input: { city: 'Oslo' } }] }, { text: 'It is 3 degrees in Oslo.' }]);
    const cities: string[] = [];
    const result = await generateText({
      model: resolver.resolve(target()),
      prompt: 'Weather in Oslo?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        weather: tool({
          description: 'Current weather of a city',
          inputSchema: z.object({ city: z.string() }),
          execute: ({ city }) => {
            cities.push(city);
            return Promise.resolve({ celsius: 3 });
          },
        }),
      },
    });
    expect(cities).toEqual(['Oslo']);
    expect(result.text).toBe('It is 3 degrees in Oslo.');
    expect(server.requests).toHaveLength(2);
    expect(JSON.stringify(server.requests[0]!.body['tools'])).toContain('weather');
    const followUp = JSON.stringify(server.requests[1]!.body['messages']);
    expect(followUp).toContain('celsius');
  });

  it('streamText() assembles a tool call whose arguments arrive in pieces', async () => {
    server.script([{ toolCalls: [{ name: 'weather', input: { city: 'Bergen', unit: 'celsius' } }] }]);
    const result = streamText({
      model: resolver.resolve(target()),
      prompt: 'Weather in Bergen?',
      maxRetries: 0,
      tools: { weather: tool({ description: 'Current weather of a city', inputSchema: z.object({ city: z.string(), unit: z.string() }) }) },
    });
    const calls = await result.toolCalls;
    expect(calls.map((call) => ({ name: call.toolName, input: call.input }))).toEqual([{ name: 'weather', input: { city: 'Bergen', unit: 'celsius' } }]);
    expect(await result.finishReason).toBe('tool-calls');
  });
});

describe('createModelResolver()', () => {
  it('sends the key from the default variable: x-api-key for anthropic, a bearer token for openai', async () => {
    server.script([{ text: 'a' }, { text: 'b' }]);
    await generateText({ model: resolver.resolve(targets['anthropic']!()), prompt: 'x', maxRetries: 0 });
    await generateText({ model: resolver.resolve(targets['openai']!()), prompt: 'x', maxRetries: 0 });
    expect(server.requests[0]!.headers['x-api-key']).toBe('sk-ant-test');
    expect(server.requests[1]!.headers['authorization']).toBe('Bearer sk-openai-test');
  });

  it('reads the key from api_key_env when given, instead of the default variable', async () => {
    server.script([{ text: 'ok' }]);
    const custom = createModelResolver({ env: { MY_GROQ: 'gsk-custom' } });
    await generateText({ model: custom.resolve({ ...targets['groq']!(), api_key_env: 'MY_GROQ' }), prompt: 'x', maxRetries: 0 });
    expect(server.requests[0]!.headers['authorization']).toBe('Bearer gsk-custom');
  });

  it('throws MODEL_API_KEY_MISSING naming the variable when the key is unset', () => {
    const empty = createModelResolver({ env: {} });
    expect(() => empty.resolve({ provider: 'anthropic', model: 'claude-sonnet-4-5' })).toThrow(
      'model "anthropic/claude-sonnet-4-5" needs an API key: set ANTHROPIC_API_KEY where Loom runs (for the daemon, in its environment, then restart it)',
    );
    expect(() => empty.resolve({ provider: 'openrouter', model: 'x/y', api_key_env: 'ROUTER_KEY' })).toThrow(
      expect.objectContaining({ code: 'MODEL_API_KEY_MISSING', details: { model: 'openrouter/x/y', variable: 'ROUTER_KEY' } }),
    );
  });

  it('treats an empty key variable as missing', () => {
    expect(() => createModelResolver({ env: { OPENAI_API_KEY: ' ' } }).resolve({ provider: 'openai', model: 'gpt-4o' })).toThrow(/set OPENAI_API_KEY/);
  });

  it('builds an ollama model with no key and sends no authorization header', async () => {
    server.script([{ text: 'local reply' }]);
    const keyless = createModelResolver({ env: {} });
    const result = await generateText({ model: keyless.resolve({ provider: 'ollama', model: 'llama3.2', base_url: server.url }), prompt: 'x', maxRetries: 0 });
    expect(result.text).toBe('local reply');
    expect(server.requests[0]!.headers['authorization']).toBeUndefined();
  });

  it('points ollama at http://127.0.0.1:11434/v1 when no base_url is given', async () => {
    const urls: string[] = [];
    const recordingFetch: typeof fetch = (input) => {
      urls.push(input instanceof Request ? input.url : String(input));
      return Promise.resolve(new Response(JSON.stringify({ error: { message: 'nope' } }), { status: 400 }));
    };
    const keyless = createModelResolver({ env: {}, fetch: recordingFetch });
    await expect(generateText({ model: keyless.resolve({ provider: 'ollama', model: 'llama3.2' }), prompt: 'x', maxRetries: 0 })).rejects.toThrow();
    expect(urls).toEqual(['http://127.0.0.1:11434/v1/chat/completions']);
  });

  it('refuses openai-compatible without base_url', () => {
    expect(() => resolver.resolve({ provider: 'openai-compatible', model: 'qwen' })).toThrow(
      expect.objectContaining({ code: 'MODEL_CONFIG_INVALID', message: expect.stringContaining('base_url is required') as string }),
    );
  });
});
