import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import type { ApprovalRecord, KernelHandle, PersonAnswer, Tool, ToolAgent, ToolResult } from '../../src/contracts/index.ts';
import { ApprovalService, createUuidGenerator } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createToolRunner, type ToolRunner } from '../../src/runtime/index.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { outcomeWithin } from '../support/outcome-within.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const unusedKernel = new Proxy({} as KernelHandle, {
  get: () => () => {
    throw new Error('not used');
  },
});

const asker: ToolAgent = {
  id: 'agent-1',
  name: 'asker',
  workspace: '/tmp/loom-ask-person',
  capabilities: [{ kind: 'tool_invoke', pattern: 'ask' }],
  execPolicy: { allow_shell: false, allow_network: false, allow_file_write: false },
  depth: 0,
  chain: [],
};

const NAME_SCHEMA = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let store: SqliteStore;
let clock: FakeClock;
let approvals: ApprovalService;
let runner: ToolRunner;
/** What each call of the `ask` tool was answered, in order. */
let answers: Promise<PersonAnswer>[];
/** The signal the next question is asked with (an MCP request's), if any. */
let questionSignal: AbortSignal | undefined;
/** Whether the `ask` tool returns at once, without waiting for its answer (a server that gave up). */
let returnAtOnce: boolean;

/** A tool that asks a person for a name, as an MCP server's elicitation does. */
const askTool: Tool<Record<string, never>> = {
  name: 'ask',
  description: 'Asks a person their name',
  inputSchema: z.strictObject({}),
  requires: () => [],
  async execute(_input, context): Promise<ToolResult> {
    if (context.askPerson === undefined) return { text: 'nobody to ask', isError: true };
    const answer = context.askPerson({ from: 'mcp_fixture_elicitation', message: 'What is your name?', schema: NAME_SCHEMA, signal: questionSignal });
    answers.push(answer);
    if (returnAtOnce) return { text: 'gave up' };
    return { text: JSON.stringify(await answer) };
  },
};

beforeEach(async () => {
  dir = await makeTempDir('loom-ask-person-');
  store = openSqliteStore({ path: join(dir.path, 'loom.db') });
  clock = createFakeClock(1_000_000);
  approvals = new ApprovalService({ store, clock, ids: createUuidGenerator(), timeoutMs: 300_000, publish: () => undefined });
  runner = createToolRunner({
    tools: [askTool as unknown as Tool<never>],
    kernel: unusedKernel,
    clock,
    logger: createSilentLogger(),
    env: {},
    audit: () => Promise.resolve(),
    approvals,
  });
  answers = [];
  questionSignal = undefined;
  returnAtOnce = false;
});
afterEach(async () => {
  await store.close();
  await dir.remove();
});

/** Runs one call of `ask` in a turn with `signal`, with `[tools.ask]` settings `settings`. */
const runAsk = (signal: AbortSignal = new AbortController().signal, settings: Record<string, number> = {}) =>
  runner.run({ toolCallId: 'c1', toolName: 'ask', input: {} }, { agent: asker, filter: { allowlist: [], blocklist: [] }, settings: { ask: settings }, signal });

/** The one pending question, once it is stored. */
const pendingQuestion = (): Promise<ApprovalRecord> => waitFor('the question to be pending', async () => (await approvals.list('pending'))[0], { everyMs: 5 });

describe('askPerson()', () => {
  it('answers cancel and closes the question as withdrawn when its signal aborts (the MCP server cancelled its request)', async () => {
    const request = new AbortController();
    questionSignal = request.signal;
    const call = runAsk();
    const question = await pendingQuestion();
    expect(question).toMatchObject({ tool: 'mcp_fixture_elicitation', status: 'pending', input: { message: 'What is your name?' } });

    request.abort(new Error('the MCP server cancelled its request'));
    const reason = 'the question was withdrawn before anyone answered (the MCP server cancelled its request); nothing was answered';
    expect(await outcomeWithin(answers[0] as Promise<PersonAnswer>, 5_000)).toEqual({ value: { action: 'cancel', reason } });
    expect((await call).result).toEqual({ text: JSON.stringify({ action: 'cancel', reason }) });
    expect(await store.approvals.get(question.id)).toMatchObject({ status: 'expired', decidedBy: 'withdrawn', reason, decidedAt: 1_000_000 });
    // Its 5-minute timeout ended with it.
    expect(clock.pending()).toBe(0);
    await expect(approvals.decide(question.id, { approved: true, by: 'owner', reason: null, answer: { name: 'Ada' } })).rejects.toThrow(
      `already decided: expired by withdrawn (${reason})`,
    );

    // A turn cancelled while its question waits is the turn's cancellation, not a withdrawal.
    answers = [];
    questionSignal = new AbortController().signal;
    const turn = new AbortController();
    const cancelled = runAsk(turn.signal);
    const next = await pendingQuestion();
    turn.abort(new Error('agent "asker" was killed during the turn'));
    expect((await cancelled).result).toEqual({ isError: true, text: 'tool "ask" was cancelled' });
    expect(await outcomeWithin(answers[0] as Promise<PersonAnswer>, 5_000)).toEqual({ value: { action: 'cancel', reason: 'the turn was cancelled' } });
    expect(await store.approvals.get(next.id)).toMatchObject({ status: 'expired', decidedBy: 'cancel' });
  });

  it('answers cancel at once, and keeps nothing pending, for a question whose signal aborted before it was asked', async () => {
    questionSignal = AbortSignal.abort(new Error('the request timed out'));
    const outcome = await outcomeWithin(runAsk(), 5_000);
    if (!(typeof outcome === 'object' && 'value' in outcome)) throw new Error(`the call did not end: ${JSON.stringify(outcome)}`);
    expect(JSON.parse(outcome.value.result.text)).toEqual({
      action: 'cancel',
      reason: 'the question was withdrawn before anyone answered (the request timed out); nothing was answered',
    });
    expect(await approvals.list('pending')).toEqual([]);
    expect(clock.pending()).toBe(0);
  });

  it('closes the question when the call that asked it ends without waiting for the answer', async () => {
    returnAtOnce = true;
    expect((await runAsk()).result).toEqual({ text: 'gave up' });
    expect(await outcomeWithin(answers[0] as Promise<PersonAnswer>, 5_000)).toEqual({
      value: { action: 'cancel', reason: 'the question was withdrawn before anyone answered (the tool call ended); nothing was answered' },
    });
    expect(await approvals.list('all')).toMatchObject([{ status: 'expired', decidedBy: 'withdrawn' }]);
    expect(clock.pending()).toBe(0);
  });

  it('closes the question at the time limit of the call that asked it', async () => {
    const call = runAsk(undefined, { timeout_seconds: 1 });
    const question = await pendingQuestion();
    await clock.advance(1_000);
    expect((await call).result).toEqual({ isError: true, text: 'tool "ask" timed out after 1 s' });
    await waitFor('the question to close', async () => ((await store.approvals.get(question.id))?.status === 'expired' ? true : undefined), { everyMs: 5 });
    expect(await store.approvals.get(question.id)).toMatchObject({
      decidedBy: 'withdrawn',
      reason: 'the question was withdrawn before anyone answered (timed out after 1 s); nothing was answered',
    });
    expect(clock.pending()).toBe(0);
  });
});

describe('ApprovalService.shutdown()', () => {
  it('closes every waiting question and approval as expired by shutdown, answers each caller, and leaves no timer', async () => {
    const call = runAsk();
    const question = await pendingQuestion();
    // A request no turn can cancel (a forged tool waiting for a person's approval).
    const forge = await approvals.open({ id: 'agent-1', name: 'asker' }, 'forge_tool', { name: 'tool' }, new AbortController().signal);
    // The call's time limit, and each request's timeout.
    expect(clock.pending()).toBe(3);

    await approvals.shutdown();
    const reason = 'Loom was stopped while this waited for a person; nothing was run — ask the agent again';
    expect(JSON.parse((await call).result.text)).toEqual({ action: 'decline', reason: `declined by shutdown: ${reason}` });
    await expect(forge.decision).resolves.toEqual({ approved: false, by: 'shutdown', reason });
    expect(await approvals.list('all')).toMatchObject([
      { id: question.id, status: 'expired', decidedBy: 'shutdown', reason },
      { id: forge.id, status: 'expired', decidedBy: 'shutdown', reason },
    ]);
    expect(clock.pending()).toBe(0);
    await expect(approvals.open({ id: 'agent-1', name: 'asker' }, 'forge_tool', {}, new AbortController().signal)).rejects.toMatchObject({
      code: 'APPROVALS_STOPPED',
      message: 'cannot ask a person about forge_tool for agent "asker": Loom is stopping',
    });
  });
  it('answers its asker decline, not cancel, when the turns are stopped right after it, as kernel.shutdown() does', async () => {
    const turn = new AbortController();
    const call = runAsk(turn.signal);
    await pendingQuestion();
    const closing = approvals.shutdown();
    turn.abort(new Error('Loom is stopping'));
    await closing;
    // The call is cancelled with its turn; what the asker (the MCP server) is answered is the shutdown's decline.
    expect((await call).result.text).toContain('cancelled');
    expect(await answers.at(-1)).toMatchObject({ action: 'decline' });
  });
});
