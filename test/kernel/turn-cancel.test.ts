import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FollowedEvent, TraceStep, TurnRecord } from '../../src/kernel/index.ts';
import { type AgentEvent, NOT_RUN_TOOL_CALL_TEXT } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
/** Released after each test, so no scripted reply is left hanging. */
let release: () => void;
let held: Promise<void>;

beforeEach(async () => {
  dir = await makeTempDir('loom-turn-cancel-');
  host = await openTestHost(dir.path);
  held = new Promise((resolve) => (release = resolve));
});
afterEach(async () => {
  release();
  await host.close();
  await dir.remove();
});

function agent(name: string, extra = ''): string {
  return `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${extra}\n`;
}

/** Reads events until `until` holds for one, returning all read. */
/** The agent events of a followed turn, without their ids. */
async function* eventsOf(followed: AsyncIterable<FollowedEvent>): AsyncGenerator<AgentEvent> {
  for await (const item of followed) if ('event' in item) yield item.event;
}

async function readUntil(events: AsyncIterator<AgentEvent>, until: (event: AgentEvent, all: AgentEvent[]) => boolean): Promise<AgentEvent[]> {
  const all: AgentEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done === true) throw new Error(`the stream ended before the awaited event; got ${all.map((event) => event.type).join(', ')}`);
    all.push(next.value);
    if (until(next.value, all)) return all;
  }
}

const textOf = (events: readonly AgentEvent[]): string => events.map((event) => (event.type === 'text-delta' ? event.text : '')).join('');

async function sessionOf(name: string): Promise<Record<string, unknown>[]> {
  return (await host.store.sessions.get(host.kernel.get(name).session_id))?.messages as Record<string, unknown>[];
}

function recordOf(message: Record<string, unknown> | undefined): TurnRecord {
  return (message?.['providerOptions'] as { loom: { turn: TurnRecord } }).loom.turn;
}

/** Waits until the scripted server has received `count` requests. */
async function requestsReach(count: number): Promise<void> {
  await waitFor(`the model server to get ${count} request(s)`, () => server.requests.length >= count);
}

describe('cancelling a turn', () => {
  it('cancelTurn() stops a streaming reply, ends the stream with TURN_CANCELLED, and the session keeps the text so far, marked cancelled', async () => {
    await host.kernel.spawn(manifest(agent('teller')));
    server.script([{ text: 'Once upon a time', stall: held }, { text: 'Shall I go on?' }]);
    const events = host.kernel.stream('teller', 'Tell me a long story')[Symbol.asyncIterator]();
    await readUntil(events, (_event, all) => textOf(all) === 'Once upon a time');

    expect(await host.kernel.runningTurn('teller')).toMatchObject({ message: 'Tell me a long story', state: 'running' });
    const cancelled = await host.kernel.cancelTurn('teller', { by: 'owner' });
    expect(cancelled).toMatchObject({ agent: 'teller', status: 'cancelled' });
    expect(cancelled.run_id).toMatch(/^[0-9a-f-]{36}$/);
    const rest = await readUntil(events, (event) => event.type === 'error');
    expect(rest.at(-1)).toMatchObject({ type: 'error', code: 'TURN_CANCELLED', message: expect.stringContaining('cancelled by owner') as string });
    expect(await host.kernel.runningTurn('teller')).toBeUndefined();

    const session = await sessionOf('teller');
    expect(session).toMatchObject([
      { role: 'user', content: 'Tell me a long story' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Once upon a time' },
          { type: 'text', text: expect.stringContaining('cut short') as string, providerOptions: { loom: { note: 'cancelled' } } },
        ],
      },
    ]);
    expect(recordOf(session[0])).toMatchObject({ id: cancelled.run_id, status: 'cancelled', reason: expect.stringContaining('cancelled by owner') as string });

    // The next message is its own turn, and the model sees what was said and that it was cut short.
    const next = await host.kernel.send('teller', 'Yes?');
    expect(next.text).toBe('Shall I go on?');
    const sent = JSON.stringify(server.requests[1]?.body['messages']);
    expect(sent).toContain('Once upon a time');
    expect(sent).toContain('cut short');
    const after = await sessionOf('teller');
    expect(after).toHaveLength(4);
    expect(recordOf(after[2])).toMatchObject({ status: 'finished' });
  });

  it('keeps the tool calls that ran and answers the one cut off as not run, when cancelled while a call waits for approval', async () => {
    await host.kernel.spawn(
      manifest(agent('careful', '[capabilities]\ntools = ["agent_list", "file_write"]\n[autonomous]\napproval_required_for = ["file_write"]')),
    );
    server.script([
      {
        text: 'Looking first.',
        toolCalls: [
          { name: 'agent_list', input: {} },
          { name: 'file_write', input: { path: 'a.txt', content: 'x' } },
        ],
      },
    ]);
    const events = host.kernel.stream('careful', 'List the agents, then write a.txt')[Symbol.asyncIterator]();
    await readUntil(events, (event) => event.type === 'approval-request');

    expect((await host.kernel.cancelTurn('careful')).status).toBe('cancelled');
    await readUntil(events, (event) => event.type === 'error');
    const session = await sessionOf('careful');
    expect(session.map((message) => message['role'])).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const results = session[2]?.['content'] as { toolName: string; output: { type: string; value: string } }[];
    expect(results).toMatchObject([
      { toolName: 'agent_list', output: { type: 'text' } },
      { toolName: 'file_write', output: { type: 'error-text', value: NOT_RUN_TOOL_CALL_TEXT } },
    ]);
    expect(JSON.stringify(results[0]?.output)).toContain('careful');
    // The approval it waited for is closed, not left pending.
    expect(await host.kernel.approvals.list()).toEqual([]);
    // The tool call that ran is in the turn's trace.
    expect(
      recordOf(session[0])
        .steps.filter((step) => step.kind === 'tool')
        .map((step) => step.toolName),
    ).toEqual(['agent_list', 'file_write']);
  });

  it('counts what a turn used before its caller went away, whatever the reason its signal carries', async () => {
    // The HTTP server aborts a request's signal with a string when its client disconnects.
    await host.kernel.spawn(manifest(agent('metered', '[capabilities]\ntools = ["agent_list"]\n[resources]\nmax_tokens_per_hour = 600')));
    const listing = (inputTokens: number, outputTokens: number) => ({ toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens, outputTokens } });
    server.script([listing(400, 100), { text: 'too late', gate: held }, listing(50, 50)]);
    const controller = new AbortController();
    const turn = host.kernel.send('metered', 'Work', { signal: controller.signal });
    await requestsReach(2);
    controller.abort('Client connection prematurely closed.');
    await expect(turn).rejects.toThrow('Client connection prematurely closed.');
    expect(await host.kernel.usage({ agent: 'metered' })).toMatchObject([{ input_tokens: 400, output_tokens: 100 }]);
    // Counted against its hourly limit too: the next message's first call spends the last 100 tokens, and its next call is refused.
    await expect(host.kernel.send('metered', 'More')).rejects.toThrow('agent "metered" has used 600 of its 600');
  });

  it('refuses to cancel when no turn runs (TURN_NOT_RUNNING), for an unknown agent, and for a caller who may not message the agent', async () => {
    await host.kernel.spawn(manifest(agent('idle')));
    await expect(host.kernel.cancelTurn('idle')).rejects.toMatchObject({
      code: 'TURN_NOT_RUNNING',
      message: 'agent "idle" has no turn running; nothing to cancel',
    });
    await expect(host.kernel.cancelTurn('nobody')).rejects.toMatchObject({ code: 'AGENT_NOT_FOUND' });
    await expect(host.kernel.followTurn('idle')).rejects.toThrow(/has no turn running; nothing to follow/);

    server.script([{ text: 'busy', stall: held }]);
    const events = host.kernel.stream('idle', 'work')[Symbol.asyncIterator]();
    await readUntil(events, (event) => event.type === 'text-delta');
    await expect(host.kernel.cancelTurn('idle', { caller: { kind: 'user', role: 'viewer', name: 'watcher' } })).rejects.toMatchObject({
      code: 'ACCESS_DENIED',
    });
    await expect(host.kernel.cancelTurn('idle', { caller: { kind: 'user', role: 'user', name: 'other', agents: ['someone-else'] } })).rejects.toMatchObject({
      code: 'ACCESS_DENIED',
    });
    release();
    expect((await readUntil(events, (event) => event.type === 'run-finish')).at(-1)).toMatchObject({ result: { text: 'busy' } });
  });
});

describe('following a turn and its trace', () => {
  it('followTurn() replays the turn so far (text joined) and then the rest, after the client that started it stopped reading', async () => {
    await host.kernel.spawn(manifest(agent('narrator')));
    server.script([{ text: 'The first part. ', stall: held }]);
    const started = host.kernel.stream('narrator', 'Narrate')[Symbol.asyncIterator]();
    await readUntil(started, (_event, all) => textOf(all) === 'The first part. ');
    // The client goes away: the turn goes on.
    await started.return?.(undefined);

    const follower = eventsOf(await host.kernel.followTurn('narrator'));
    const replayed = await readUntil(follower, (event) => event.type === 'text-delta');
    expect(replayed[0]).toMatchObject({ type: 'run-start' });
    expect(replayed.filter((event) => event.type === 'text-delta')).toEqual([{ type: 'text-delta', text: 'The first part. ' }]);
    release();
    const rest = await readUntil(follower, (event) => event.type === 'run-finish');
    expect(rest.at(-1)).toMatchObject({ type: 'run-finish', result: { text: 'The first part. ' } });
    expect((await follower.next()).done).toBe(true);
    expect(recordOf((await sessionOf('narrator'))[0])).toMatchObject({ status: 'finished' });
  });

  it('records each model call with its tokens and latency and each tool call with its duration, in order, on the kernel clock', async () => {
    await host.kernel.spawn(manifest(agent('tracer', '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]')));
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    server.script([
      { toolCalls: [{ name: 'file_write', input: { path: 'notes.txt', content: 'hi' } }], usage: { inputTokens: 120, outputTokens: 7 }, gate },
      { text: 'Written.', usage: { inputTokens: 150, outputTokens: 3 } },
    ]);
    const startedAt = host.clock.now();
    const events = host.kernel.stream('tracer', 'Write notes.txt')[Symbol.asyncIterator]();
    await readUntil(events, (event) => event.type === 'run-start');
    await requestsReach(1);
    await host.clock.advance(1500);
    answer();
    const request = (await readUntil(events, (event) => event.type === 'approval-request')).at(-1) as Extract<AgentEvent, { type: 'approval-request' }>;
    await host.clock.advance(2000);
    await host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null });
    const rest = await readUntil(events, (event) => event.type === 'run-finish');
    expect(rest.find((event) => event.type === 'tool-result')).toMatchObject({ toolName: 'file_write', isError: false, durationMs: 2000 });

    const record = recordOf((await sessionOf('tracer'))[0]);
    expect(record).toMatchObject({ status: 'finished', model: 'openai/gpt-4o', inputTokens: 270, outputTokens: 10, startedAt, finishedAt: startedAt + 3500 });
    expect(record.steps).toEqual<TraceStep[]>([
      { kind: 'model', model: 'openai/gpt-4o', inputTokens: 120, outputTokens: 7, costUsd: expect.any(Number) as number, startedAt, latencyMs: 1500 },
      {
        kind: 'tool',
        toolCallId: expect.any(String) as string,
        toolName: 'file_write',
        startedAt: startedAt + 1500,
        durationMs: 2000,
        isError: false,
        approval: 'approved',
      },
      {
        kind: 'model',
        model: 'openai/gpt-4o',
        inputTokens: 150,
        outputTokens: 3,
        costUsd: expect.any(Number) as number,
        startedAt: startedAt + 3500,
        latencyMs: 0,
      },
    ]);
    expect(record.costUsd).toBeGreaterThan(0);
    expect((await sessionOf('tracer'))[0]?.['providerOptions']).toMatchObject({ loom: { at: startedAt } });
  });
});
