import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateText, Output, stepCountIs, streamText, tool } from 'ai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseManifest } from '../../src/manifest/index.ts';
import { createModelResolver, type ModelTarget } from '../../src/models/index.ts';
import { parseTextToolCalls } from '../../src/models/text-tool-calls.ts';
import { fallbackChain } from '../../src/kernel/model-targets.ts';
import { startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.ts';
import { openTestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';

// Models served by Ollama, vLLM, LM Studio or llama.cpp, at the wire: the real OpenAI-compatible
// provider talks to the scripted server, which records what it was sent.

let server: ScriptedModelServer;
let refusing: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModelServer();
  refusing = await startScriptedModelServer({ refuseResponseFormats: ['json_schema'] });
});
afterAll(async () => {
  await server.close();
  await refusing.close();
});
beforeEach(() => {
  server.reset();
  refusing.reset();
});
afterEach(() => {
  expect(server.remaining()).toBe(0);
  expect(refusing.remaining()).toBe(0);
});

const PlanSchema = z.object({ steps: z.array(z.string()) });
const ollama = (extra: Partial<ModelTarget> = {}): ModelTarget => ({ provider: 'ollama', model: 'qwen3:8b', base_url: server.url, ...extra });
const weather = () =>
  tool({
    description: 'Current weather of a city',
    inputSchema: z.object({ city: z.string() }),
    execute: ({ city }) => Promise.resolve({ city, celsius: 3 }),
  });

describe('structured output on OpenAI-compatible servers', () => {
  it('sends the JSON schema (response_format json_schema) to Ollama and openai-compatible servers', async () => {
    const resolver = createModelResolver({ env: {} });
    for (const target of [ollama(), { provider: 'openai-compatible', model: 'local', base_url: server.url } as const]) {
      server.script([{ text: '{"steps":["read","write"]}' }]);
      const result = await generateText({ model: resolver.resolve(target), prompt: 'Plan', output: Output.object({ schema: PlanSchema }), maxRetries: 0 });
      expect(result.output).toEqual({ steps: ['read', 'write'] });
    }
    for (const request of server.requests) {
      const format = request.body['response_format'] as { type: string; json_schema: { schema: { properties: Record<string, unknown> } } };
      expect(format.type).toBe('json_schema');
      expect(Object.keys(format.json_schema.schema.properties)).toEqual(['steps']);
    }
  });

  it('sends json_object without the schema when [model].structured_outputs = false', async () => {
    const resolver = createModelResolver({ env: {} });
    server.script([{ text: '{"steps":["a"]}' }, { text: '{"steps":["b"]}' }]);
    for (const target of [ollama(), ollama({ structured_outputs: false })]) {
      const result = await generateText({ model: resolver.resolve(target), prompt: 'Plan', output: Output.object({ schema: PlanSchema }), maxRetries: 0 });
      expect(result.output).toMatchObject({ steps: [expect.any(String)] });
    }
    expect(server.requests.map((request) => (request.body['response_format'] as { type: string }).type)).toEqual(['json_schema', 'json_object']);
  });

  it('falls back to json_object when the server refuses json_schema, and sends json_object at once after', async () => {
    const resolver = createModelResolver({ env: {} });
    const target = ollama({ base_url: refusing.url });
    refusing.script([{ text: '{"steps":["one"]}' }, { text: '{"steps":["two"]}' }]);
    const first = await generateText({ model: resolver.resolve(target), prompt: 'Plan', output: Output.object({ schema: PlanSchema }), maxRetries: 0 });
    const second = await generateText({ model: resolver.resolve(target), prompt: 'Plan again', output: Output.object({ schema: PlanSchema }), maxRetries: 0 });
    expect([first.output, second.output]).toEqual([{ steps: ['one'] }, { steps: ['two'] }]);
    expect(refusing.requests.map((request) => (request.body['response_format'] as { type: string }).type)).toEqual([
      'json_schema',
      'json_object',
      'json_object',
    ]);
    expect(first.warnings?.map((warning) => ('message' in warning ? warning.message : ''))).toContainEqual(
      expect.stringContaining('refused response_format json_schema'),
    );
  });

  it('reads structured_outputs from [model] into the model a turn calls', () => {
    const { manifest } = parseManifest('name = "planner"\n[model]\nprovider = "ollama"\nmodel = "qwen3:8b"\nstructured_outputs = false\n', {
      source: 'planner.toml',
    });
    expect(fallbackChain(manifest, {})[0]?.target.structured_outputs).toBe(false);
  });
});

describe('tool calls a local model writes as text', () => {
  const resolver = createModelResolver({ env: {} });

  it.each([
    ['Qwen/Hermes <tool_call> tags', '<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo"}}\n</tool_call>'],
    ['Llama 3.1 <|python_tag|>', '<|python_tag|>{"name": "weather", "parameters": {"city": "Oslo"}}<|eom_id|>'],
    ['Mistral [TOOL_CALLS]', '[TOOL_CALLS][{"name": "weather", "arguments": {"city": "Oslo"}}]'],
    ['a bare JSON reply', '{"name": "weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}'],
    ['a fenced JSON reply', '```json\n{"name": "weather", "arguments": {"city": "Oslo"}}\n```'],
    ['a <tool_call> whose JSON opens with "index"', '<tool_call>{"index": 0, "name": "weather", "arguments": {"city": "Oslo"}}</tool_call>'],
    ['[TOOL_CALLS] whose call opens with "call_id"', '[TOOL_CALLS][{"call_id": "a", "name": "weather", "arguments": {"city": "Oslo"}}]'],
    ['bare JSON that opens with "tool_call_id"', '{"tool_call_id": "b", "name": "weather", "arguments": {"city": "Oslo"}}'],
    ['JSON that gives its name twice, the last offered', '{"name": "nope", "name": "weather", "arguments": {"city": "Oslo"}}'],
  ])('generateText() runs the tool of %s and sends its result back', async (_form, text) => {
    server.script([{ text }, { text: 'It is 3 degrees in Oslo.' }]);
    const result = await generateText({
      model: resolver.resolve(ollama()),
      prompt: 'Weather in Oslo?',
      tools: { weather: weather() },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.steps[0]?.toolCalls.map((call) => [call.toolName, call.input])).toEqual([['weather', { city: 'Oslo' }]]);
    expect(result.text).toBe('It is 3 degrees in Oslo.');
    expect(JSON.stringify(server.requests[1]!.body['messages'])).toContain('celsius');
  });

  it('streamText() passes the words before a <tool_call> on as text and runs the call after them', async () => {
    server.script([
      { text: 'Let me check the weather.\n<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>' },
      { text: 'It is 3 degrees.' },
    ]);
    const result = streamText({
      model: resolver.resolve(ollama()),
      prompt: 'Weather in Oslo?',
      tools: { weather: weather() },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.join('')).toBe('Let me check the weather.\nIt is 3 degrees.');
    expect(deltas.length).toBeGreaterThan(2);
    expect((await result.steps)[0]?.toolCalls.map((call) => call.input)).toEqual([{ city: 'Oslo' }]);
  });

  it('leaves prose that shows JSON, or names no offered tool, as the text it is, and repairs only the call', async () => {
    const prose = 'Use this form: {"name": "rm", "arguments": {"path": "/"}} and no other.';
    const unknown = '{"name": "shell", "arguments": {"cmd": "ls"}}';
    server.script([{ text: prose }, { text: unknown }, { text: '<tool_call>{"name": "weather", "arguments": {"city": "Rome"}}</tool_call>' }]);
    const first = await generateText({ model: resolver.resolve(ollama()), prompt: 'Explain', tools: { weather: weather() }, maxRetries: 0 });
    const second = streamText({ model: resolver.resolve(ollama()), prompt: 'List', tools: { weather: weather() }, maxRetries: 0 });
    const third = streamText({ model: resolver.resolve(ollama()), prompt: 'Weather in Rome?', tools: { weather: weather() }, maxRetries: 0 });
    expect([first.text, await second.text, await third.text]).toEqual([prose, unknown, '']);
    expect([first.toolCalls.length, (await second.toolCalls).length]).toEqual([0, 0]);
    expect((await third.toolCalls).map((call) => call.input)).toEqual([{ city: 'Rome' }]);
    expect(await third.finishReason).toBe('tool-calls');
  });

  // Each reply is streamed whole, then its end is held back: what the reader sees meanwhile was shown before the end.
  it.each([
    ['a ```python fence', '```python\ndef add(a, b):\n    return a + b\n```\nCall it with two numbers.', '```python\ndef add(a, b):'],
    ['a JSON example', '{"users": [{"id": 1, "name": "Ada"}]}\nThat is the list.', '{"users": [{"id": 1, "name": "Ada"}]}\nThat'],
    ['an array of JSON examples', '[{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob"}]\nThose are the users.', '[{"id": 1, "name": "Ada"}'],
    [
      'JSON that names a tool not offered',
      '```json\n{"name": "shell", "arguments": {"cmd": "ls"}}\n```\nThat runs ls.',
      '```json\n{"name": "shell", "arguments": {"cmd": "ls"}}',
    ],
    [
      'a call followed by prose',
      '{"name": "weather", "arguments": {"city": "Oslo"}} is how a call looks.',
      '{"name": "weather", "arguments": {"city": "Oslo"}} is',
    ],
  ])('streamText() shows a reply that opens with %s before the reply ends, whole and in order', async (_form, text, before) => {
    let end = (): void => undefined;
    server.script([{ text, stall: new Promise<void>((resolve) => (end = resolve)) }]);
    const result = streamText({ model: resolver.resolve(ollama()), prompt: 'Show me', tools: { weather: weather() }, maxRetries: 0 });
    const shown: string[] = [];
    const reading = (async () => {
      for await (const delta of result.textStream) shown.push(delta);
    })();
    await waitFor(`"${before}" shown before the reply ends`, () => shown.join('').startsWith(before));
    end();
    await reading;
    expect(shown.join('')).toBe(text);
    expect(await result.toolCalls).toEqual([]);
  });

  it.each([
    ['fenced JSON', '```json\n{"name": "weather", "arguments": {"city": "Oslo"}}\n```'],
    ['JSON that opens with "tool_call_id"', '{"tool_call_id": "b", "name": "weather", "arguments": {"city": "Oslo"}}'],
    ['JSON that gives its name twice, the last offered', '{"name": "nope", "name": "weather", "arguments": {"city": "Oslo"}}'],
    ["an array in OpenAI's form", '[{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}}]'],
    ['a <tool_call> whose JSON opens with "index"', '<tool_call>{"index": 0, "name": "weather", "arguments": {"city": "Oslo"}}</tool_call>'],
  ])('streamText() runs a call written as %s, showing none of its text', async (_form, text) => {
    server.script([{ text }, { text: 'It is 3 degrees.' }]);
    const result = streamText({
      model: resolver.resolve(ollama()),
      prompt: 'Weather in Oslo?',
      tools: { weather: weather() },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.join('')).toBe('It is 3 degrees.');
    expect((await result.steps)[0]?.toolCalls.map((call) => [call.toolName, call.input])).toEqual([['weather', { city: 'Oslo' }]]);
  });

  it("parseTextToolCalls() reads a call's JSON whatever key it opens with, its name from `function` or the last `name`", () => {
    const tools = new Set(['weather']);
    const call = [{ toolName: 'weather', input: {} }];
    expect(parseTextToolCalls('{"type": "function", "function": {"name": "weather", "arguments": {}}}', tools)?.calls).toEqual(call);
    expect(parseTextToolCalls('{"users": [], "name": "weather"}', tools)?.calls).toEqual(call);
    expect(parseTextToolCalls('{"name": "shell", "function": {"name": "weather"}}', tools)?.calls).toEqual(call);
    expect(parseTextToolCalls('{"name": "weather", "name": "shell"}', tools)).toBeUndefined();
  });

  it('parseTextToolCalls() reads several tagged calls and keeps the text around them', () => {
    const parsed = parseTextToolCalls(
      'First.<tool_call>{"name":"a","arguments":{}}</tool_call> then <tool_call>{"name":"b","arguments":{"x":1}}</tool_call> done',
      new Set(['a', 'b']),
    );
    expect(parsed).toEqual({
      calls: [
        { toolName: 'a', input: {} },
        { toolName: 'b', input: { x: 1 } },
      ],
      text: 'First. then  done',
    });
    expect(parseTextToolCalls('<tool_call>{"name":"a", broken</tool_call>', new Set(['a']))).toBeUndefined();
  });
});

describe('an empty reply from a local model', () => {
  const resolver = createModelResolver({ env: {} });

  it('generateText() fails with an error naming the model and what to change', async () => {
    server.script([{ text: '', usage: { inputTokens: 4000, outputTokens: 0 } }]);
    await expect(generateText({ model: resolver.resolve(ollama()), prompt: 'Hello', maxRetries: 0 })).rejects.toThrow(
      /model "ollama\/qwen3:8b" sent an empty reply \(no text and no tool call; finish reason "stop", 0 output tokens\).*num_ctx/,
    );
  });

  it('streamText() ends in the same error, not an empty answer', async () => {
    server.script([{ text: '  ' }]);
    const result = streamText({ model: resolver.resolve(ollama()), prompt: 'Hello', tools: { weather: weather() }, maxRetries: 0, onError: () => undefined });
    const errors: unknown[] = [];
    for await (const part of result.fullStream) if (part.type === 'error') errors.push(part.error);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'MODEL_EMPTY_REPLY' });
  });
});

describe('agents on a local model, through the kernel', () => {
  const local = () => `[model]\nprovider = "ollama"\nmodel = "qwen3:8b"\nbase_url = "${server.url}"\n`;

  it("a delegate agent's choice of agent is asked for with its schema, and a specialist's text tool call runs through the tool runner", async () => {
    const dir = await makeTempDir('loom-local-models-');
    const host = await openTestHost(dir.path);
    try {
      await host.kernel.spawn(manifest(`name = "researcher"\ndescription = "Finds facts"\n${local()}[capabilities]\ntools = ["file_write"]\n`));
      await host.kernel.spawn(
        manifest(
          `name = "front-desk"\nmodule = "builtin:delegate"\n${local()}[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher"]\n[delegate]\nmanaged_agents = ["researcher"]\n`,
        ),
      );
      server.script([
        { text: JSON.stringify({ agent: 'researcher', reasoning: 'facts' }) },
        { text: 'Note the boiling point of water.' },
        // The researcher writes its calls as text: the one it is offered runs; one it is not stays words.
        { text: 'Noting it.\n<tool_call>{"name": "file_write", "arguments": {"path": "notes.txt", "content": "100 C"}}</tool_call>' },
        { text: '<tool_call>{"name": "shell_exec", "arguments": {"command": "ls"}}</tool_call>' },
        { text: 'Noted: 100 C.' },
      ]);
      const result = await host.kernel.send('front-desk', 'note when water boils');
      expect(result.text).toBe('Noted: 100 C.');
      const selection = server.requests[0]!.body['response_format'] as { type: string; json_schema: { schema: { properties: Record<string, unknown> } } };
      expect(selection.type).toBe('json_schema');
      expect(Object.keys(selection.json_schema.schema.properties)).toContain('agent');
      expect(await readFile(join(host.home.workspacesDir, 'researcher', 'notes.txt'), 'utf8')).toBe('100 C');
      expect(JSON.stringify(server.requests[4]!.body['messages'])).toContain('<tool_call>{\\"name\\": \\"shell_exec\\"');
    } finally {
      await host.close();
      await dir.remove();
    }
  });
});
