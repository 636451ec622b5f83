import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccessDeniedError, AgentChainError, AgentStateError, QuotaExceededError } from '../../src/errors/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { SUMMARY_PREFIX } from '../../src/runtime/index.ts';
import { startScriptedModelServer } from '../support/scripted-model-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, settleWithClock, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-send-');
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

function agent(name: string, extra = '', model = 'gpt-4o'): string {
  return `name = "${name}"\n${extra}\n[model]\nprovider = "openai"\nmodel = "${model}"\nbase_url = "${server.url}"\n`;
}

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('kernel.send()', () => {
  it("answers with the model's text, usage, iterations and cost, and records usage and the session", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('echo')));
    server.script([{ text: 'Hello there.', usage: { inputTokens: 1000, outputTokens: 500 } }]);

    const result = await host.kernel.send('echo', 'Hi');
    expect(result).toEqual({
      text: 'Hello there.',
      usage: { inputTokens: 1000, outputTokens: 500 },
      iterations: 1,
      costUsd: expect.any(Number) as number,
      model: 'openai/gpt-4o',
    });
    expect(result.costUsd).toBeGreaterThan(0);
    const usage = await host.store.usage.list();
    expect(usage).toMatchObject([{ model: 'openai/gpt-4o', inputTokens: 1000, outputTokens: 500, costUsd: result.costUsd }]);
    const session = await host.store.sessions.get(host.kernel.get('echo').session_id);
    expect(session?.messages).toMatchObject([{ role: 'user', content: 'Hi' }, { role: 'assistant' }]);
  });

  it("runs an agent whose [model] names no model on the daemon's default model, with its settings", async () => {
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o-mini', base_url: server.url } });
    await host.kernel.spawn(manifest('name = "briefed"\n[model]\nsystem_prompt = "Answer in one word."\ntemperature = 0.1\nmax_tokens = 64\n'));
    server.script([{ text: 'Yes.' }]);
    const result = await host.kernel.send('briefed', 'Ready?');
    expect(result.model).toBe('openai/gpt-4o-mini');
    const body = server.requests[0]?.body ?? {};
    expect(body['model']).toBe('gpt-4o-mini');
    expect(JSON.stringify(body['messages'])).toContain('Answer in one word.');
    expect(body['temperature']).toBe(0.1);
    expect(host.kernel.get('briefed').model).toBeNull();
  });

  it('sends the stability guidelines and the history of earlier turns', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('memoryful')));
    server.script([{ text: 'first answer' }, { text: 'second answer' }]);
    await host.kernel.send('memoryful', 'first question');
    await host.kernel.send('memoryful', 'second question');
    const second = JSON.stringify(server.requests[1]?.body['messages']);
    expect(second).toContain('STABILITY GUIDELINES');
    expect(second).toContain('first question');
    expect(second).toContain('first answer');
  });

  it('re-reads a session that another process saved since the last turn', async () => {
    host = await openTestHost(dir.path);
    const view = await host.kernel.spawn(manifest(agent('shared')));
    server.script([{ text: 'first' }, { text: 'second' }]);
    await host.kernel.send('shared', 'one');
    // Another process (another kernel on the same file) rewrites the history.
    await host.store.sessions.save({
      id: view.session_id,
      agentId: view.id,
      messages: [
        { role: 'user', content: 'rewritten elsewhere' },
        { role: 'assistant', content: 'ok' },
      ],
      createdAt: 0,
      updatedAt: 1,
    });
    await host.kernel.send('shared', 'two');
    const sent = JSON.stringify(server.requests[1]?.body['messages']);
    expect(sent).toContain('rewritten elsewhere');
    expect(sent).not.toContain('first');
  });

  it('repairs a history another process damaged, though the turns before found it well formed', async () => {
    host = await openTestHost(dir.path);
    const view = await host.kernel.spawn(manifest(agent('repaired')));
    server.script([{ text: 'first' }, { text: 'second' }, { text: 'third' }]);
    await host.kernel.send('repaired', 'one');
    await host.kernel.send('repaired', 'two');
    // Another process appends a tool result that answers no call: providers refuse such a history.
    const revision = (await host.store.sessions.revision(view.session_id)) ?? 0;
    await host.store.sessions.append(
      view.session_id,
      [{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'ghost', toolName: 'agent_list', output: { type: 'text', value: 'orphan' } }] }],
      { expectedRevision: revision, updatedAt: 1 },
    );
    await host.kernel.send('repaired', 'three');
    const sent = JSON.stringify(server.requests[2]?.body['messages']);
    expect(sent).toContain('two');
    expect(sent).not.toContain('orphan');
  });

  it("commits a finished turn's audit record with its messages: one record, told once, even when the log's own appends fail", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('audited')));
    server.script([{ text: 'Done.', usage: { inputTokens: 12, outputTokens: 3 } }]);
    const told: string[] = [];
    const unsubscribe = host.kernel.events.subscribe((event) => told.push(event.type));
    // A second write for the record would fail now; the turn's own commit does not use it.
    host.store.events.append = () => Promise.reject(new Error('the event log refuses separate appends'));
    const result = await host.kernel.send('audited', 'Hi');
    unsubscribe();
    const records = await host.store.events.list({ type: 'turn-finish' });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      agentId: host.kernel.get('audited').id,
      data: { name: 'audited', kind: 'message', via: 'owner', model: result.model, iterations: 1, inputTokens: 12, outputTokens: 3 },
    });
    expect(told.filter((type) => type === 'turn-finish')).toHaveLength(1);
  });

  it('runs a tool the model calls inside the workspace and gives it the result', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('writer', '[capabilities]\ntools = ["file_write", "file_read"]')));
    server.script([
      { toolCalls: [{ name: 'file_write', input: { path: 'notes.txt', content: 'remember the milk' } }] },
      { toolCalls: [{ name: 'file_read', input: { path: 'notes.txt' } }] },
      { text: 'Done.' },
    ]);
    const events = await collect(host.kernel.stream('writer', 'Write a note'));
    expect(await readFile(join(host.home.workspacesDir, 'writer', 'notes.txt'), 'utf8')).toBe('remember the milk');
    expect(JSON.stringify(server.requests[2]?.body['messages'])).toContain('remember the milk');
    const toolEvents = events
      .filter((event) => event.type === 'tool-call' || event.type === 'tool-result')
      .map((event) => `${event.type}:${'toolName' in event ? event.toolName : ''}`);
    expect(toolEvents).toEqual(['tool-call:file_write', 'tool-result:file_write', 'tool-call:file_read', 'tool-result:file_read']);
    const finish = events.at(-1);
    expect(finish).toMatchObject({ type: 'run-finish', result: { text: 'Done.', iterations: 3 } });
  });

  it('never shows the model a tool the agent may not call', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('narrow', '[capabilities]\ntools = ["agent_list"]')));
    server.script([{ text: 'ok' }]);
    await host.kernel.send('narrow', 'hi');
    const tools = JSON.stringify(server.requests[0]?.body['tools']);
    expect(tools).toContain('agent_list');
    expect(tools).not.toContain('file_read');
    expect(tools).not.toContain('shell_exec');
  });

  it('refuses a file outside the granted glob without reading it, tells the model why, and audits it', async () => {
    host = await openTestHost(dir.path);
    const secret = join(dir.path, 'secret.txt');
    await import('node:fs/promises').then((fs) => fs.writeFile(secret, 'the launch codes'));
    await host.kernel.spawn(manifest(agent('reader', `[capabilities]\ntools = ["file_read"]\nfile_read = ["${dir.path}/public/*"]`)));
    server.script([{ toolCalls: [{ name: 'file_read', input: { path: secret } }] }, { text: 'I cannot read it.' }]);
    const events = await collect(host.kernel.stream('reader', 'Read the secret'));
    const result = events.find((event) => event.type === 'tool-result');
    expect(result).toMatchObject({ isError: true });
    expect(result !== undefined && 'text' in result ? result.text : '').toContain(`is not granted [capabilities].file_read "${secret}"`);
    expect(JSON.stringify(server.requests)).not.toContain('the launch codes');
    const audit = await host.store.events.list({ type: 'tool-deny' });
    expect(audit).toMatchObject([{ data: { tool: 'file_read', agentName: 'reader' } }]);
  });

  it('moves to the fallback model after the primary keeps failing with 500', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(
      manifest(
        `name = "resilient"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "${server.url}"\n[[fallback_models]]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "${server.url}"\n`,
      ),
    );
    server.script([{ status: 500 }, { status: 500 }, { status: 500 }, { text: 'from the fallback' }]);
    const result = await settleWithClock(host.clock, host.kernel.send('resilient', 'hi'));
    expect(result).toMatchObject({ text: 'from the fallback', model: 'openai/gpt-4o-mini' });
    expect(server.requests.map((request) => request.api)).toEqual(['anthropic', 'anthropic', 'anthropic', 'openai']);
  });

  it('routes a short plain message to the fast tier and a long code-heavy one to the smart tier', async () => {
    const tier = (model: string) => ({ provider: 'openai', model, base_url: server.url });
    host = await openTestHost(dir.path, { routing: { fast: tier('gpt-4o-mini'), smart: tier('gpt-4.1') } });
    await host.kernel.spawn(manifest(agent('router', '[routing]\nenabled = true')));
    server.script([{ text: 'short' }, { text: 'long' }]);
    const events = await collect(host.kernel.stream('router', 'hi'));
    expect(events).toContainEqual({ type: 'phase', phase: 'model-call', detail: 'routed to the fast tier: openai/gpt-4o-mini' });
    const code = `Refactor this:\n\`\`\`ts\n${'function f(x: number) { return x * 2; }\n'.repeat(80)}\`\`\`\n`;
    await host.kernel.send('router', code);
    expect(server.requests.map((request) => request.body['model'])).toEqual(['gpt-4o-mini', 'gpt-4.1']);
  });

  it('uses the manifest model when the routed tier has no model configured', async () => {
    host = await openTestHost(dir.path, { routing: { frontier: { provider: 'openai', model: 'gpt-4.1', base_url: server.url } } });
    await host.kernel.spawn(manifest(agent('router', '[routing]\nenabled = true')));
    server.script([{ text: 'short' }]);
    await host.kernel.send('router', 'hi');
    expect(server.requests[0]?.body['model']).toBe('gpt-4o');
  });

  it('refuses a repeated identical tool call at the fifth time', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('stuck', '[capabilities]\ntools = ["agent_list"]')));
    const call = { toolCalls: [{ name: 'agent_list', input: {} }] };
    server.script([call, call, call, call, call, { text: 'giving up' }]);
    const events = await collect(host.kernel.stream('stuck', 'loop'));
    const results = events.filter((event): event is Extract<AgentEvent, { type: 'tool-result' }> => event.type === 'tool-result');
    expect(results.map((result) => result.isError)).toEqual([false, false, false, false, true]);
    expect(results[4]?.text).toMatch(/agent_list.*5 times/);
    expect(events.some((event) => event.type === 'phase' && event.phase === 'loop-guard')).toBe(true);
  });

  it('refuses a message once the hourly token quota is used, saying when it frees up', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('thrifty', '[resources]\nmax_tokens_per_hour = 20')));
    server.script([
      { text: 'a', usage: { inputTokens: 10, outputTokens: 5 } },
      { text: 'b', usage: { inputTokens: 10, outputTokens: 5 } },
    ]);
    await host.kernel.send('thrifty', 'one');
    await host.kernel.send('thrifty', 'two');
    const refused = host.kernel.send('thrifty', 'three');
    await expect(refused).rejects.toThrow(QuotaExceededError);
    await expect(host.kernel.send('thrifty', 'three')).rejects.toThrow(/has used 30 of its 20 tokens per hour; it frees up at .* \(in 60 min\)/);
    expect(server.requests).toHaveLength(2);
    await host.clock.advance(60 * 60 * 1000 + 1);
    server.script([{ text: 'c' }]);
    expect((await host.kernel.send('thrifty', 'four')).text).toBe('c');
  });

  it('compacts a long history into a summary and keeps the recent messages', async () => {
    host = await openTestHost(dir.path, { context_windows: { 'openai/gpt-4o': 2000 } });
    const view = await host.kernel.spawn(manifest(agent('chatty')));
    const long = 'word '.repeat(60);
    const history = Array.from({ length: 30 }, (_, index) => ({ role: index % 2 === 0 ? 'user' : 'assistant', content: `message ${index} ${long}` }));
    await host.store.sessions.save({ id: view.session_id, agentId: view.id, messages: history, createdAt: 0, updatedAt: 0 });
    server.script([{ text: 'SUMMARY: thirty messages were exchanged.' }, { text: 'after compaction' }]);

    const events = await collect(host.kernel.stream('chatty', 'and now?'));
    expect(events.some((event) => event.type === 'phase' && event.phase === 'compaction')).toBe(true);
    const session = await host.store.sessions.get(view.session_id);
    const first = session?.messages[0] as { content: string };
    expect(first.content.startsWith(SUMMARY_PREFIX)).toBe(true);
    expect(first.content).toContain('thirty messages were exchanged');
    const text = JSON.stringify(session?.messages);
    expect(text).not.toContain('message 0 ');
    expect(text).toContain('message 29 ');
    expect(text).toContain('after compaction');
    // The summary request saw the old messages; the turn itself did not.
    expect(JSON.stringify(server.requests[0]?.body['messages'])).toContain('message 0 ');
    expect(JSON.stringify(server.requests[1]?.body['messages'])).not.toContain('message 0 ');
  });

  it("follows the agent's [compaction]: its own window, threshold and kept messages, or none when disabled", async () => {
    host = await openTestHost(dir.path);
    const history = Array.from({ length: 30 }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `message ${index} ${'word '.repeat(60)}`,
    }));
    const tuned = await host.kernel.spawn(manifest(agent('tuned', '[compaction]\nmax_context_tokens = 4000\nthreshold = 0.5\nkeep_last_n = 4')));
    await host.store.sessions.save({ id: tuned.session_id, agentId: tuned.id, messages: history, createdAt: 0, updatedAt: 0 });
    server.script([{ text: 'SUMMARY' }, { text: 'tuned reply' }]);
    expect((await host.kernel.send('tuned', 'and now?')).text).toBe('tuned reply');
    const kept = (await host.store.sessions.get(tuned.session_id))?.messages ?? [];
    // The summary, then the last 4 messages (the new one included), then the reply.
    expect(JSON.stringify(kept[0])).toContain(SUMMARY_PREFIX);
    expect(JSON.stringify(kept)).not.toContain('message 26 ');
    expect(JSON.stringify(kept)).toContain('message 27 ');
    expect(kept).toHaveLength(6);

    const off = await host.kernel.spawn(manifest(agent('verbatim', '[compaction]\nenabled = false\nmax_context_tokens = 4000')));
    await host.store.sessions.save({ id: off.session_id, agentId: off.id, messages: history, createdAt: 0, updatedAt: 0 });
    server.script([{ text: 'no summary asked' }]);
    expect((await host.kernel.send('verbatim', 'and now?')).text).toBe('no summary asked');
    expect(JSON.stringify((await host.store.sessions.get(off.session_id))?.messages)).toContain('message 0 ');
  });

  it('carries on with the full history when the summary fails', async () => {
    host = await openTestHost(dir.path, { context_windows: { 'openai/gpt-4o': 2000 } });
    const view = await host.kernel.spawn(manifest(agent('stubborn')));
    const history = Array.from({ length: 30 }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `message ${index} ${'word '.repeat(60)}`,
    }));
    await host.store.sessions.save({ id: view.session_id, agentId: view.id, messages: history, createdAt: 0, updatedAt: 0 });
    server.script([{ status: 400 }, { text: 'still here' }]);
    expect((await host.kernel.send('stubborn', 'and now?')).text).toBe('still here');
    // Nothing was summarised, so nothing was dropped from the session (the request itself was
    // cut to fit the window by session repair).
    const stored = JSON.stringify((await host.store.sessions.get(view.session_id))?.messages);
    expect(stored).toContain('message 0 ');
    expect(stored).not.toContain(SUMMARY_PREFIX);
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('Earlier messages were removed to fit the context window');
  });

  it('lets an agent message another and get its reply as the tool result', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('caller', '[capabilities]\ntools = ["agent_message"]\nagent_message = ["callee"]')));
    await host.kernel.spawn(manifest(agent('callee')));
    server.script([
      { toolCalls: [{ name: 'agent_message', input: { target_agent_name: 'callee', message: 'ping' } }] },
      { text: 'pong' },
      { text: 'callee said pong' },
    ]);
    const result = await host.kernel.send('caller', 'ask callee');
    expect(result.text).toBe('callee said pong');
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('ping');
    expect(JSON.stringify(server.requests[2]?.body['messages'])).toContain('pong');
  });

  it('refuses a message to an agent the caller holds no agent_message grant for', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('nosy', '[capabilities]\ntools = ["agent_message"]')));
    await host.kernel.spawn(manifest(agent('private')));
    server.script([{ toolCalls: [{ name: 'agent_message', input: { target_agent_name: 'private', message: 'hi' } }] }, { text: 'refused' }]);
    const events = await collect(host.kernel.stream('nosy', 'talk to private'));
    expect(events.find((event) => event.type === 'tool-result')).toMatchObject({
      isError: true,
      text: expect.stringContaining('[capabilities].agent_message "private"') as string,
    });
    expect(server.requests).toHaveLength(2);
  });

  it('stops agent-to-agent chains past five levels and refuses cycles', async () => {
    host = await openTestHost(dir.path);
    const ids: string[] = [];
    for (const name of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'target']) {
      ids.push((await host.kernel.spawn(manifest(agent(name, '[capabilities]\nagent_message = ["*"]')))).id);
    }
    const [a1, a2, a3, a4, a5, a6] = ids as [string, string, string, string, string, string];
    await expect(host.kernel.send('target', 'deep', { caller: { kind: 'agent', agentId: a6, chain: [a1, a2, a3, a4, a5] } })).rejects.toThrow(AgentChainError);
    await expect(host.kernel.send('a1', 'back', { caller: { kind: 'agent', agentId: a2, chain: [a1] } })).rejects.toThrow(/already waiting in this chain/);
    server.script([{ text: 'five deep is fine' }]);
    const ok = await host.kernel.send('target', 'depth five', { caller: { kind: 'agent', agentId: a5, chain: [a1, a2, a3, a4] } });
    expect(ok.text).toBe('five deep is fine');
  });

  it('refuses a suspended agent and a viewer', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('napping')));
    await expect(host.kernel.send('napping', 'hi', { caller: { kind: 'user', role: 'viewer' } })).rejects.toThrow(AccessDeniedError);
    await host.kernel.suspend('napping');
    await expect(host.kernel.send('napping', 'hi')).rejects.toThrow(AgentStateError);
    expect(server.requests).toHaveLength(0);
  });

  it("keeps the user's message in the session when every model fails, marked failed and followed by a note saying why", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('doomed')));
    server.script([{ status: 401 }]);
    await expect(host.kernel.send('doomed', 'are you there?')).rejects.toThrow(/openai\/gpt-4o/);
    const session = await host.store.sessions.get(host.kernel.get('doomed').session_id);
    expect(session?.messages).toMatchObject([
      {
        role: 'user',
        content: 'are you there?',
        providerOptions: { loom: { turn: { status: 'failed', reason: expect.stringContaining('openai/gpt-4o') as string } } },
      },
      {
        role: 'assistant',
        content: [{ type: 'text', text: expect.stringMatching(/^\[No reply: .*401/) as string, providerOptions: { loom: { note: 'failed' } } }],
      },
    ]);
    expect(session?.messages).toHaveLength(2);
  });

  it('continues a reply cut off by the token limit', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('verbose')));
    server.script([{ text: 'part one, ', finishReason: 'length' }, { text: 'part two.' }]);
    const result = await host.kernel.send('verbose', 'tell me everything');
    expect(result).toMatchObject({ text: 'part one, part two.', iterations: 2 });
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('Please continue');
  });
});

describe('agent and memory tools through the kernel', () => {
  it("stores and recalls memory in the agent's own scope, and survives a restart", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(
      manifest(agent('keeper', '[capabilities]\ntools = ["memory_store", "memory_recall"]\nmemory_write = ["self.*"]\nmemory_read = ["self.*"]')),
    );
    server.script([{ toolCalls: [{ name: 'memory_store', input: { key: 'self.colour', value: 'teal' } }] }, { text: 'Stored.' }]);
    await host.kernel.send('keeper', 'remember teal');
    await host.close();
    host = await openTestHost(dir.path);
    server.script([
      { toolCalls: [{ name: 'memory_recall', input: { key: 'self.colour' } }] },
      { toolCalls: [{ name: 'memory_recall', input: { query: 'tea' } }] },
      { text: 'It is teal.' },
    ]);
    const events = await collect(host.kernel.stream('keeper', 'what colour?'));
    const results = events.filter((event): event is Extract<AgentEvent, { type: 'tool-result' }> => event.type === 'tool-result');
    expect(results.map((result) => result.text)).toEqual(['self.colour = "teal"', 'self.colour = "teal"']);
  });

  it("refuses to write another agent's memory without a grant, and reads it with one", async () => {
    host = await openTestHost(dir.path);
    const owner = await host.kernel.spawn(manifest(agent('owner')));
    await host.store.memory.put({ agentId: owner.id, key: 'plan', value: 'world peace', updatedAt: 0 });
    await host.kernel.spawn(manifest(agent('snoop', '[capabilities]\ntools = ["memory_store", "memory_recall"]\nmemory_read = ["owner.*"]')));
    server.script([
      { toolCalls: [{ name: 'memory_store', input: { key: 'owner.plan', value: 'chaos' } }] },
      { toolCalls: [{ name: 'memory_recall', input: { key: 'owner.plan' } }] },
      { text: 'done' },
    ]);
    const results = (await collect(host.kernel.stream('snoop', 'go'))).filter(
      (event): event is Extract<AgentEvent, { type: 'tool-result' }> => event.type === 'tool-result',
    );
    expect(results[0]).toMatchObject({ isError: true, text: expect.stringContaining('[capabilities].memory_write "owner.plan"') as string });
    expect(results[1]).toMatchObject({ isError: false, text: 'owner.plan = "world peace"' });
    expect((await host.store.memory.get(owner.id, 'plan'))?.value).toBe('world peace');
  });

  it("refuses a new agent name holding a dot, and keeps an older such agent's memory from a search under another agent's grant", async () => {
    host = await openTestHost(dir.path);
    expect(() => manifest(agent('bob.vault'))).toThrow('no "." (memory keys and events name an agent as "<agent>.<key>", split at the first dot)');
    // An agent stored before the rule: "bob.vault" holds a secret; "reader" may read agent bob's memory only.
    const bob = await host.kernel.spawn(manifest(agent('bob')));
    const vault = { id: 'b0b0b0b0-0000-4000-8000-000000000001', sessionId: 'b0b0b0b0-0000-4000-8000-000000000002' };
    await host.store.agents.create(
      {
        id: vault.id,
        name: 'bob.vault',
        state: 'running',
        parentId: null,
        sessionId: vault.sessionId,
        manifest: { name: 'bob.vault' },
        createdAt: 0,
        updatedAt: 0,
      },
      { id: vault.sessionId, agentId: vault.id, messages: [], createdAt: 0, updatedAt: 0 },
    );
    await host.store.memory.put({ agentId: vault.id, key: 'password', value: 'hunter2', updatedAt: 0 });
    await host.store.memory.put({ agentId: bob.id, key: 'hint', value: 'hunter2 is not it', updatedAt: 0 });
    await host.close();
    host = await openTestHost(dir.path);
    expect(
      host.kernel
        .list()
        .map((view) => view.name)
        .sort(),
    ).toEqual(['bob', 'bob.vault']);
    await host.kernel.spawn(manifest(agent('reader', '[capabilities]\ntools = ["memory_recall"]\nmemory_read = ["bob.*"]')));
    const search = await host.kernel.runAgentTool('reader', 'memory_recall', { query: 'hunter2' });
    expect(search.text).toBe('bob.hint = "hunter2 is not it"');
    // The key itself names agent bob's "vault.password", which does not exist.
    expect((await host.kernel.runAgentTool('reader', 'memory_recall', { key: 'bob.vault.password' })).text).not.toContain('hunter2');
  });

  it("spawns a child through agent_spawn within the parent's capabilities, and refuses an escalating one", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(
      manifest(
        agent(
          'boss',
          '[capabilities]\ntools = ["agent_spawn", "agent_list", "agent_kill"]\nagent_spawn = true\nagent_kill = ["worker"]\nnetwork = ["*.example.com"]',
        ),
      ),
    );
    server.script([
      { toolCalls: [{ name: 'agent_spawn', input: { manifest: 'name = "worker"\n[capabilities]\nnetwork = ["api.example.com"]' } }] },
      { toolCalls: [{ name: 'agent_spawn', input: { manifest: 'name = "rogue"\n[capabilities]\nshell = ["*"]' } }] },
      { toolCalls: [{ name: 'agent_list', input: {} }] },
      { toolCalls: [{ name: 'agent_kill', input: { agent: 'worker' } }] },
      { text: 'done' },
    ]);
    const results = (await collect(host.kernel.stream('boss', 'delegate'))).filter(
      (event): event is Extract<AgentEvent, { type: 'tool-result' }> => event.type === 'tool-result',
    );
    expect(results[0]).toMatchObject({ isError: false, text: expect.stringMatching(/^spawned worker \(/) as string });
    expect(results[1]).toMatchObject({ isError: true, text: expect.stringContaining('[capabilities].shell "*"') as string });
    expect(results[2]?.text).toContain('worker (running)');
    expect(results[3]).toMatchObject({ isError: false, text: 'killed worker' });
    expect(host.kernel.list().map((view) => view.name)).toEqual(['boss']);
  });

  it('refuses a message once the hourly cost quota is used', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('spender', '[resources]\nmax_cost_per_hour = 0.01')));
    server.script([{ text: 'pricey', usage: { inputTokens: 4000, outputTokens: 1000 } }]);
    await host.kernel.send('spender', 'one');
    await expect(host.kernel.send('spender', 'two')).rejects.toThrow(/has used \$0\.0200 of its \$0\.01 USD per hour/);
  });

  it('stops a turn at [resources].max_iterations', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('busy', '[capabilities]\ntools = ["agent_list"]\n[resources]\nmax_iterations = 2')));
    server.script([{ toolCalls: [{ name: 'agent_list', input: {} }] }, { toolCalls: [{ name: 'agent_list', input: {} }] }]);
    const result = await host.kernel.send('busy', 'keep going');
    expect(result.iterations).toBe(2);
    expect(result.text).toContain('[stopped after 2 iterations ([resources].max_iterations = 2)]');
    expect(server.requests).toHaveLength(2);
  });
});

describe('turns in parallel, and agents stopped during a turn', () => {
  it('runs concurrent messages to one agent one at a time, keeping both in the session', async () => {
    host = await openTestHost(dir.path);
    const view = await host.kernel.spawn(manifest(agent('serial')));
    server.script([{ text: 'answer one' }, { text: 'answer two' }]);
    const [one, two] = await Promise.all([host.kernel.send('serial', 'question one'), host.kernel.send('serial', 'question two')]);
    expect([one.text, two.text]).toEqual(['answer one', 'answer two']);
    // The second request already carried the first turn.
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('answer one');
    const session = await host.store.sessions.get(view.session_id);
    expect(JSON.stringify(session?.messages)).toMatch(/question one.*answer one.*question two.*answer two/);
  });

  it('checks the quota when a queued turn starts, so concurrent messages cannot overspend', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('rationed', '[resources]\nmax_tokens_per_hour = 20')));
    server.script([
      { text: 'a', usage: { inputTokens: 10, outputTokens: 5 } },
      { text: 'b', usage: { inputTokens: 10, outputTokens: 5 } },
      { text: 'c' },
      { text: 'd' },
    ]);
    const results = await Promise.allSettled(['1', '2', '3', '4'].map((text) => host.kernel.send('rationed', text)));
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect(server.requests).toHaveLength(2);
  });

  it('aborts the running and queued turns of an agent that is killed', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('doomed')));
    server.script([{ text: 'too late' }, { text: 'never' }]);
    // Their refusals are awaited before the kill: they come while it runs.
    const first = expect(host.kernel.send('doomed', 'one')).rejects.toThrow(/doomed/);
    const second = expect(host.kernel.send('doomed', 'two')).rejects.toThrow(/doomed/);
    await host.kernel.kill('doomed');
    await first;
    await second;
    expect(server.requests.length).toBeLessThanOrEqual(1);
    expect(await host.store.usage.list()).toEqual([]);
  });

  it('refuses the message that would make two agents wait on each other, and both turns finish', async () => {
    const other = await startScriptedModelServer();
    try {
      host = await openTestHost(dir.path);
      const talk = (name: string, peer: string, url: string) =>
        manifest(
          `name = "${name}"\n[capabilities]\ntools = ["agent_message"]\nagent_message = ["${peer}"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${url}"\n`,
        );
      await host.kernel.spawn(talk('alice', 'bob', server.url));
      await host.kernel.spawn(talk('bob', 'alice', other.url));
      server.script([
        { toolCalls: [{ name: 'agent_message', input: { target_agent_name: 'bob', message: 'hi bob' } }] },
        { text: 'alice done' },
        { text: 'alice replies' },
      ]);
      other.script([
        { toolCalls: [{ name: 'agent_message', input: { target_agent_name: 'alice', message: 'hi alice' } }] },
        { text: 'bob done' },
        { text: 'bob replies' },
      ]);
      const events: AgentEvent[] = [];
      const collectInto = async (name: string): Promise<void> => {
        for await (const event of host.kernel.stream(name, 'talk to your peer')) events.push(event);
      };
      await Promise.all([collectInto('alice'), collectInto('bob')]);
      const refusals = events.filter((event) => event.type === 'tool-result' && event.isError && event.text.includes('both would wait forever'));
      expect(refusals).toHaveLength(1);
      expect(events.filter((event) => event.type === 'run-finish').length).toBeGreaterThanOrEqual(2);
    } finally {
      await other.close();
    }
  });

  it("refuses a tool that would kill the calling agent's own parent", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('parent', '[capabilities]\nagent_spawn = true\ntools = ["agent_kill"]\nagent_kill = ["*"]')));
    await host.kernel.spawn(manifest(agent('child', '[capabilities]\ntools = ["agent_kill"]\nagent_kill = ["*"]')), { parent: 'parent' });
    server.script([{ toolCalls: [{ name: 'agent_kill', input: { agent: 'parent' } }] }, { text: 'could not' }]);
    const results = (await collect(host.kernel.stream('child', 'kill your parent'))).filter((event) => event.type === 'tool-result');
    expect(results).toMatchObject([{ isError: true, text: expect.stringContaining('would kill itself') as string }]);
    expect(host.kernel.list().map((view) => view.name)).toEqual(['parent', 'child']);
  });

  it('counts the usage of a turn that fails midway and keeps what it did', async () => {
    host = await openTestHost(dir.path);
    const view = await host.kernel.spawn(manifest(agent('halfway', '[capabilities]\ntools = ["agent_list"]')));
    server.script([{ toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 5000, outputTokens: 100 } }, { status: 401 }]);
    await expect(host.kernel.send('halfway', 'go')).rejects.toThrow(/openai\/gpt-4o/);
    expect(await host.store.usage.list()).toMatchObject([{ inputTokens: 5000, outputTokens: 100 }]);
    const session = await host.store.sessions.get(view.session_id);
    expect(JSON.stringify(session?.messages)).toContain('agent_list');
  });

  it('caps each model call at [capabilities].llm_max_tokens and refuses models outside llm_query', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('capped', '[capabilities]\nllm_max_tokens = 100\nllm_query = ["openai/gpt-4o"]')));
    await host.kernel.spawn(manifest(agent('fenced', '[capabilities]\nllm_query = ["anthropic/*"]')));
    server.script([{ text: 'short' }]);
    await host.kernel.send('capped', 'hi');
    expect(server.requests[0]?.body['max_tokens'] ?? server.requests[0]?.body['max_completion_tokens']).toBe(100);
    await expect(host.kernel.send('fenced', 'hi')).rejects.toThrow('is not granted [capabilities].llm_query for "openai/gpt-4o"');
  });
});

describe('roles in the kernel', () => {
  it('refuse a user caller the agent its key does not allow, whatever door it came through', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agent('public-helper')));
    await host.kernel.spawn(manifest(agent('private-helper')));
    server.script([{ text: 'hello' }]);
    const caller = { kind: 'user', role: 'user', name: 'ci', agents: ['public-*'] } as const;
    expect((await host.kernel.send('public-helper', 'hi', { caller })).text).toBe('hello');
    await expect(host.kernel.send('private-helper', 'hi', { caller })).rejects.toThrow(
      '"ci" may not message agent "private-helper": its key allows "public-*"',
    );
    expect(server.requests).toHaveLength(1);
  });
});
