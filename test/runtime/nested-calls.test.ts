/**
 * The calls tools make through their toolbox (compose steps, sandbox bridges) are part of the call
 * that holds them: they run under its signal, the loop guard sees them, one top-level call has a
 * budget of them ([emergent].max_nested_calls), and compose tools nest at most two levels. The
 * compose tools here run the engine's `runCompose` through the real tool runner; their steps call
 * the real `http_request` tool against a server on 127.0.0.1 that counts what it gets.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createFakeClock } from '../../src/clock/index.ts';
import type { Capability, JsonObject, KernelHandle, Tool, ToolAgent, ToolResult } from '../../src/contracts/index.ts';
import type { ComposeStep } from '../../src/forged-tools/forge-request.ts';
import { type ForgedRun, MAX_COMPOSE_LEVELS, runCompose } from '../../src/forged-tools/run-forged.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createLoopGuard, createToolRunner, type ToolAuditEntry, type ToolCallOptions } from '../../src/runtime/index.ts';
import { DEFAULT_MAX_NESTED_CALLS, type ToolFinishEntry } from '../../src/runtime/tool-runner.ts';
import { httpRequestTool } from '../../src/tools/builtin/web-http-request-tool.ts';
import { waitFor } from '../support/wait-for.ts';
import { startTestServer, type TestServer } from '../tools/web-tool-context.ts';

const unusedKernel = new Proxy({} as KernelHandle, {
  get: () => () => {
    throw new Error('not used');
  },
});

let web: TestServer;

beforeAll(async () => {
  web = await startTestServer((_request, response) => response.end('ok'));
});
afterAll(async () => {
  await web.close();
});
beforeEach(() => {
  web.received.length = 0;
});

/** A compose tool as the engine runs one; `runs` gets each run's outcome once its last step is over. */
function composeTool(name: string, steps: readonly ComposeStep[], runs: ForgedRun[] = []): Tool<never> {
  const tool: Tool<JsonObject> = {
    name,
    description: `compose tool ${name}`,
    inputSchema: z.record(z.string(), z.json()),
    requires: () => [],
    async execute(input, context): Promise<ToolResult> {
      if (context.toolbox === undefined) throw new Error('no toolbox');
      const run = await runCompose(steps, input, context.toolbox);
      runs.push(run);
      return run.ok ? { text: JSON.stringify(run.output) } : { text: `${name} failed: ${run.problem}`, isError: true };
    },
  };
  return tool as unknown as Tool<never>;
}

/** `count` steps, each calling `tool` with `input` (the step's index put in for `{i}`). */
function steps(count: number, tool: string, input: (index: number) => JsonObject = () => ({})): ComposeStep[] {
  return Array.from({ length: count }, (_, index) => ({ name: `s${index + 1}`, tool, inputMapping: input(index + 1) }));
}

const get = (path: string) => (index: number) => ({ url: `${web.origin}${path.replace('{i}', String(index))}`, method: 'GET' });

function agentWith(extra: Partial<ToolAgent> = {}): ToolAgent {
  const capabilities: Capability[] = [{ kind: 'tool_all' }, { kind: 'net_connect', pattern: `127.0.0.1:${web.port}` }];
  return {
    id: 'agent-1',
    name: 'composer',
    workspace: '/tmp/loom-nested-calls',
    capabilities,
    execPolicy: { allow_shell: false, allow_network: true, allow_file_write: false },
    depth: 0,
    chain: [],
    ...extra,
  };
}

function setup(tools: Tool<never>[]) {
  const clock = createFakeClock();
  const audit: ToolAuditEntry[] = [];
  const finished: ToolFinishEntry[] = [];
  const runner = createToolRunner({
    tools: [httpRequestTool as unknown as Tool<never>, ...tools],
    kernel: unusedKernel,
    clock,
    logger: createSilentLogger(),
    env: {},
    audit: (entry) => {
      audit.push(entry);
      return Promise.resolve();
    },
    finished: (entry) => {
      finished.push(entry);
      return Promise.resolve();
    },
  });
  return { runner, clock, audit, finished };
}

/** The options of a model's call in a turn. */
function modelCall(agent: ToolAgent, extra: Partial<ToolCallOptions> = {}): ToolCallOptions {
  return { agent, filter: { allowlist: [], blocklist: [] }, settings: {}, signal: new AbortController().signal, ...extra };
}

const call = (toolName: string) => ({ toolCallId: 'model-call-1', toolName, input: {} });

describe('compose tools that nest', () => {
  it('refuses a third level of compose tools, so one model call makes a handful of requests where it made N×N×N', async () => {
    const n = 4;
    // outer's steps call middle; middle's first step fetches, its second calls inner, which fetches n times.
    const inner = composeTool('inner', steps(n, 'http_request', get('/inner/{i}')));
    const middle = composeTool('middle', [
      ...steps(1, 'http_request', get('/middle')),
      { name: 'inner', tool: 'inner', inputMapping: {} },
      ...steps(n - 2, 'http_request', get('/middle/{i}')),
    ]);
    const outer = composeTool('outer', steps(n, 'middle'));
    const { runner } = setup([inner, middle, outer]);

    // Two levels run: middle, called by the model, and inner, called by its step.
    const twoLevels = await runner.run(call('middle'), modelCall(agentWith()));
    expect(twoLevels.result.isError).toBeUndefined();
    expect(web.received).toHaveLength(1 + n + (n - 2));

    web.received.length = 0;
    const outcome = await runner.run(call('outer'), modelCall(agentWith()));
    expect(outcome.result.isError).toBe(true);
    expect(outcome.result.text).toBe(
      'outer failed: step 1 "s1" (middle) failed: middle failed: step 2 "inner" (inner) failed: inner failed: not run: it was called by a step of a compose tool that is itself a step of another, ' +
        `and compose tools nest at most ${MAX_COMPOSE_LEVELS} levels (a compose step may call a compose tool, whose steps may not call a third); give the calling tool the steps of this one instead`,
    );
    // middle's first fetch, and nothing of inner.
    expect(web.received.map((request) => request.url)).toEqual(['/middle']);
  });

  it('refuses a nested call past [emergent].max_nested_calls, counting every level together, and audits the refusal once', async () => {
    const n = 8;
    const middle = composeTool('middle', steps(n, 'http_request', get('/middle/{i}')));
    const outer = composeTool('outer', steps(n, 'middle'));
    const { runner, audit, finished } = setup([middle, outer]);

    const outcome = await runner.run(call('outer'), modelCall(agentWith({ maxNestedCalls: 20 })));
    // Two middles of 1 + 8 calls, then the third middle and 1 fetch: 20; its second fetch is refused.
    expect(web.received).toHaveLength(n + n + 1);
    const refusal =
      'middle may not call http_request: the call of outer has made 20 nested tool calls, all it may make ([emergent].max_nested_calls = 20); have the tool call fewer tools, or raise [emergent].max_nested_calls';
    expect(outcome.result).toEqual({
      isError: true,
      text: `outer failed: step 3 "s3" (middle) failed: middle failed: step 2 "s2" (http_request) failed: ${refusal}`,
    });
    expect(audit).toEqual([{ agentId: 'agent-1', agentName: 'composer', tool: 'http_request', outcome: 'denied', reason: refusal }]);
    // Every nested call that ran is in the audit log as a tool call, as the model's own are.
    expect(finished.filter((entry) => entry.tool === 'http_request')).toHaveLength(web.received.length);
    expect(finished.filter((entry) => entry.tool === 'middle')).toHaveLength(3);

    // The next model call has a budget of its own.
    web.received.length = 0;
    expect((await runner.run(call('middle'), modelCall(agentWith({ maxNestedCalls: 20 })))).result.isError).toBeUndefined();
    expect(web.received).toHaveLength(n);
  });

  it(`gives an agent without [emergent].max_nested_calls a budget of ${DEFAULT_MAX_NESTED_CALLS} nested calls`, async () => {
    const n = 8;
    const middle = composeTool('middle', steps(n, 'http_request', get('/middle/{i}')));
    const outer = composeTool('outer', steps(n, 'middle'));
    const { runner } = setup([middle, outer]);

    const outcome = await runner.run(call('outer'), modelCall(agentWith()));
    expect(outcome.result.text).toContain(`([emergent].max_nested_calls = ${DEFAULT_MAX_NESTED_CALLS})`);
    // 5 middles of 1 + 8 calls are 45; the sixth middle and 4 fetches make 50.
    expect(web.received).toHaveLength(5 * n + 4);
    expect(web.received.length).toBeLessThanOrEqual(DEFAULT_MAX_NESTED_CALLS);
  });
});

describe("a compose tool's time limit", () => {
  it('aborts the running step and starts no step after it once the compose tool\'s call times out, and the model gets "timed out"', async () => {
    let started = false;
    let aborted = false;
    let release: (result: ToolResult) => void = () => undefined;
    // A step that runs until its signal aborts (or the test lets it go).
    const waiter: Tool<Record<string, never>> = {
      name: 'waiter',
      description: 'Waits',
      inputSchema: z.strictObject({}),
      requires: () => [],
      execute: (_input, context) =>
        new Promise((resolve) => {
          started = true;
          release = resolve;
          context.signal.addEventListener('abort', () => {
            aborted = true;
            resolve({ text: 'stopped' });
          });
        }),
    };
    const runs: ForgedRun[] = [];
    const slow = composeTool('slow', [{ name: 'wait', tool: 'waiter', inputMapping: {} }, ...steps(1, 'http_request', get('/after'))], runs);
    const { runner, clock } = setup([waiter as unknown as Tool<never>, slow]);

    const pending = runner.run(call('slow'), modelCall(agentWith(), { settings: { slow: { timeout_seconds: 3 } } }));
    await waitFor('the first step to start', () => started);
    await clock.advance(3_000);
    const outcome = await pending;
    expect(outcome.result).toEqual({ isError: true, text: 'tool "slow" timed out after 3 s' });
    expect(outcome.failure).toEqual({ kind: 'timeout' });
    expect(aborted).toBe(true);

    // Let the step go, were it still running, and wait for the compose tool's own end.
    release({ text: 'done waiting' });
    await waitFor('the compose tool to end', () => runs.length === 1);
    expect(runs[0]).toEqual({ ok: false, problem: 'step 1 "wait" (waiter) failed: tool "waiter" was cancelled' });
    expect(web.received).toEqual([]);
  });

  it('starts no call a tool asks for once its own call has timed out', async () => {
    let toolbox: Parameters<Tool['execute']>[1]['toolbox'];
    const stuck: Tool<Record<string, never>> = {
      name: 'stuck',
      description: 'Keeps its toolbox and never answers',
      inputSchema: z.strictObject({}),
      requires: () => [],
      execute: (_input, context) => {
        toolbox = context.toolbox;
        return new Promise(() => undefined);
      },
    };
    const { runner, clock, finished } = setup([stuck as unknown as Tool<never>]);
    const pending = runner.run(call('stuck'), modelCall(agentWith(), { settings: { stuck: { timeout_seconds: 2 } } }));
    await waitFor('the tool to start', () => toolbox !== undefined);
    await clock.advance(2_000);
    expect((await pending).result.text).toBe('tool "stuck" timed out after 2 s');

    const late = await toolbox?.invoke('http_request', { url: `${web.origin}/late`, method: 'GET' });
    expect(late).toEqual({ isError: true, text: 'stuck did not start http_request: its call timed out after 2 s' });
    expect(web.received).toEqual([]);
    expect(finished).toEqual([]);
  });
});

describe('the loop guard and nested calls', () => {
  it("refuses the fifth identical nested call of one model call, as it would the model's own, and passes its warning on", async () => {
    const repeat = composeTool('repeat', steps(6, 'http_request', get('/same')));
    const { runner, audit } = setup([repeat]);

    const outcome = await runner.run(call('repeat'), modelCall(agentWith(), { loopGuard: createLoopGuard() }));
    expect(web.received).toHaveLength(4);
    expect(outcome.result).toEqual({
      isError: true,
      text: 'repeat failed: step 5 "s5" (http_request) failed: Refused tool call "http_request": it was called 5 times with the same parameters. Try a different approach, or report the blocker.',
    });
    expect(outcome.hint).toBe(
      'You have called "http_request" 3 times with the same parameters. You are repeating yourself; stop and reflect, then try a different approach.',
    );
    expect(audit.map((entry) => [entry.tool, entry.outcome])).toEqual([['http_request', 'blocked']]);
  });

  it('ends the loop when nested calls trip the circuit breaker', async () => {
    const repeat = composeTool('repeat', steps(4, 'http_request', get('/same')));
    const { runner } = setup([repeat]);
    const loopGuard = createLoopGuard({ warnAt: 10, blockAt: 10, breakAt: 3 });

    const outcome = await runner.run(call('repeat'), modelCall(agentWith(), { loopGuard }));
    expect(outcome.breakLoop).toBe(
      'Loop guard ended the agent loop after 3 repeated tool calls; the last was "http_request", called 4 times with the same parameters.',
    );
    expect(outcome.result.isError).toBe(true);
    expect(web.received).toHaveLength(3);
  });
});
