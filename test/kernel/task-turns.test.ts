import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CapabilityDeniedError, TokenBudgetExceededError } from '../../src/errors/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { DOUBLE_IT } from '../support/forge-requests.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-task-turns-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const worker = (extra = ''): string =>
  `name = "worker"\n${extra}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nsystem_prompt = "You are the worker."\n[capabilities]\ntools = ["file_read", "file_write"]\n`;

const toolNamesOf = (body: Record<string, unknown>): string[] =>
  ((body['tools'] as { function: { name: string } }[] | undefined) ?? []).map((tool) => tool.function.name);

describe('kernel.runTask()', () => {
  it("runs a standalone prompt with the step's instructions, leaving the session untouched and counting the usage", async () => {
    await host.kernel.spawn(manifest(worker()));
    server.script([{ text: 'done', usage: { inputTokens: 40, outputTokens: 2 } }]);

    const result = await host.kernel.runTask('worker', { prompt: 'Summarize the inbox', instructions: 'Skill: be brief.' });

    expect(result).toMatchObject({ text: 'done', usage: { inputTokens: 40, outputTokens: 2 } });
    const [request] = server.requests;
    const messages = request?.body['messages'] as { role: string; content: string }[];
    expect(messages[0]?.role).toBe('system');
    expect(messages[0]?.content).toContain('You are the worker.\n\nSkill: be brief.');
    expect(messages.slice(1)).toEqual([{ role: 'user', content: 'Summarize the inbox' }]);
    expect((await host.kernel.session('worker')).messages).toEqual([]);
    expect(await host.kernel.usage({ agent: 'worker' })).toMatchObject([{ input_tokens: 40, output_tokens: 2 }]);
  });

  it('limits a step to less than the agent holds: other tools are neither shown nor run', async () => {
    await host.kernel.spawn(manifest(worker()));
    server.script([{ toolCalls: [{ name: 'file_write', input: { path: 'out.txt', content: 'x' } }] }, { text: 'could not' }]);

    await host.kernel.runTask('worker', { prompt: 'Write it', limit: [{ kind: 'tool_invoke', pattern: 'file_read' }] });

    expect(toolNamesOf(server.requests[0]?.body ?? {})).toEqual(['file_read']);
    const toolMessage = (server.requests[1]?.body['messages'] as { role: string; content: string }[]).find((message) => message.role === 'tool');
    expect(toolMessage?.content).toMatch(/file_write/);
    expect(existsSync(join(host.home.workspacesDir, 'worker', 'out.txt'))).toBe(false);
  });

  it('stops when the token budget is passed, before the tool calls of that step run, and still counts the usage', async () => {
    await host.kernel.spawn(manifest(worker()));
    server.script([{ toolCalls: [{ name: 'file_write', input: { path: 'late.txt', content: 'x' } }], usage: { inputTokens: 500, outputTokens: 100 } }]);

    const turn = host.kernel.runTask('worker', { prompt: 'Write it', tokenBudget: { max: 512, label: 'activity "write" (token_budget.max = 512)' } });

    await expect(turn).rejects.toThrow(TokenBudgetExceededError);
    await expect(turn).rejects.toThrow('stopped: activity "write" (token_budget.max = 512) allows 512 tokens and 600 were used');
    expect(existsSync(join(host.home.workspacesDir, 'worker', 'late.txt'))).toBe(false);
    expect(server.remaining()).toBe(0);
    expect(await host.kernel.usage({ agent: 'worker' })).toMatchObject([{ input_tokens: 500, output_tokens: 100 }]);
  });

  it("runs on the step's model only when the agent may call it", async () => {
    await host.kernel.spawn(manifest(worker('')));
    const other = { provider: 'openai' as const, model: 'gpt-4o-mini', base_url: server.url };
    await expect(host.kernel.runTask('worker', { prompt: 'hi', model: other })).rejects.toThrow(CapabilityDeniedError);
    expect(server.requests).toEqual([]);

    await host.kernel.kill('worker');
    const granted = worker().replace('tools = ["file_read", "file_write"]', 'tools = ["file_read"]\nllm_query = ["openai/gpt-4o-mini"]');
    await host.kernel.spawn(manifest(granted));
    server.script([{ text: 'from mini' }]);
    expect(await host.kernel.runTask('worker', { prompt: 'hi', model: other })).toMatchObject({ text: 'from mini', model: 'openai/gpt-4o-mini' });
    expect(server.requests[0]?.body['model']).toBe('gpt-4o-mini');
  });

  it('counts the judges of its forged tools among its models only while [emergent] is on', async () => {
    const mini = { provider: 'openai' as const, model: 'gpt-4o-mini', base_url: server.url };
    // Off, a judge_model is no model the agent calls: a step may not run on it (a child's confinement does not count it either).
    await host.kernel.spawn(manifest(worker('[emergent]\nenabled = false\njudge_model = "openai/gpt-4o-mini"')));
    await expect(host.kernel.runTask('worker', { prompt: 'hi', model: mini })).rejects.toThrow('agent "worker" may not call model "openai/gpt-4o-mini"');
    expect(server.requests).toEqual([]);

    await host.kernel.kill('worker');
    await host.kernel.spawn(manifest(worker('[emergent]\njudge_model = "openai/gpt-4o-mini"')));
    server.script([{ text: 'from the judge model' }]);
    expect(await host.kernel.runTask('worker', { prompt: 'hi', model: mini })).toMatchObject({ text: 'from the judge model', model: 'openai/gpt-4o-mini' });
  });

  it('counts the tiers it is routed over among its models only while [routing] is on', async () => {
    // Closed first: this test needs a daemon whose config names a tier's model.
    await host.close();
    host = await openTestHost(dir.path, { routing: { fast: { provider: 'openai', model: 'gpt-4o-mini', base_url: server.url } } });
    const mini = { provider: 'openai' as const, model: 'gpt-4o-mini', base_url: server.url };
    await host.kernel.spawn(manifest(worker('[routing]\nenabled = false')));
    await expect(host.kernel.runTask('worker', { prompt: 'hi', model: mini })).rejects.toThrow('agent "worker" may not call model "openai/gpt-4o-mini"');
    expect(server.requests).toEqual([]);

    await host.kernel.kill('worker');
    await host.kernel.spawn(manifest(worker('[routing]\nenabled = true')));
    server.script([{ text: 'from the fast tier' }]);
    expect(await host.kernel.runTask('worker', { prompt: 'hi', model: mini })).toMatchObject({ text: 'from the fast tier', model: 'openai/gpt-4o-mini' });
  });

  it("refuses a forge in a step whose limit does not name the judge's model, without calling it", async () => {
    const agent = worker('[emergent]\njudge_model = "openai/gpt-4o-mini"').replace(
      'tools = ["file_read", "file_write"]',
      'tools = ["forge_tool"]\nllm_query = ["openai/gpt-4o", "openai/gpt-4o-mini"]',
    );
    await host.kernel.spawn(manifest(agent));
    const limit = [
      { kind: 'tool_invoke' as const, pattern: 'forge_tool' },
      { kind: 'llm_query' as const, pattern: 'openai/gpt-4o' },
    ];
    server.script([{ toolCalls: [{ name: 'forge_tool', input: DOUBLE_IT }] }, { text: 'could not forge it' }]);
    expect((await host.kernel.runTask('worker', { prompt: 'Make a doubling tool', limit })).text).toBe('could not forge it');
    // The judge (gpt-4o-mini) was never asked: only the step's model was.
    expect(server.requests.map((request) => request.body['model'])).toEqual(['gpt-4o', 'gpt-4o']);
    const toolResult = JSON.stringify(server.requests[1]?.body['messages']);
    expect(toolResult).toContain('refused the tool at the judge stage');
    expect(toolResult).toMatch(
      /may not judge \(creation\) in this step: it would call .{0,4}"openai\/gpt-4o-mini.{0,4}", and the step is limited to its own model/,
    );
    expect(await host.kernel.forgedTools.list({ agent: 'worker' })).toEqual([]);
  });

  it("sends generate_text in a step to the step's model, and refuses it in a limited turn whose limit names none of the agent's models", async () => {
    const agent = worker().replace('tools = ["file_read", "file_write"]', 'tools = ["generate_text"]\nllm_query = ["openai/gpt-4o", "openai/gpt-4o-mini"]');
    await host.kernel.spawn(manifest(agent));
    const mini = { provider: 'openai' as const, model: 'gpt-4o-mini', base_url: server.url };
    const limit = [
      { kind: 'tool_invoke' as const, pattern: 'generate_text' },
      { kind: 'llm_query' as const, pattern: 'openai/gpt-4o-mini' },
    ];
    // A step on gpt-4o-mini: generate_text goes there too, not to the agent's own gpt-4o.
    server.script([{ toolCalls: [{ name: 'generate_text', input: { prompt: 'a short note' } }] }, { text: 'the note' }, { text: 'done' }]);
    await host.kernel.runTask('worker', { prompt: 'Draft it', model: mini, limit });
    expect(server.requests.map((request) => request.body['model'])).toEqual(['gpt-4o-mini', 'gpt-4o-mini', 'gpt-4o-mini']);

    // A limited turn on the agent's own model whose limit names only gpt-4o-mini: refused, not called.
    server.script([{ toolCalls: [{ name: 'generate_text', input: { prompt: 'a long essay' } }] }, { text: 'gave up' }]);
    await host.kernel.runTask('worker', { prompt: 'Draft it', limit });
    expect(server.requests.slice(3).map((request) => request.body['model'])).toEqual(['gpt-4o', 'gpt-4o']);
    const refusal = (server.requests[4]?.body['messages'] as { role: string; content: string }[]).find((message) => message.role === 'tool');
    expect(JSON.parse(refusal?.content ?? '{}')).toEqual({
      error: 'generate_text failed: agent "worker" may not generate_text in this step: it would call "openai/gpt-4o", and the step is limited to its own model',
    });
  });
});
