import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createFakeClock } from '../../src/clock/index.ts';
import type { Capability, KernelHandle, Tool, ToolAgent } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createLoopGuard, createToolRunner, type ToolAuditEntry } from '../../src/runtime/index.ts';

const unusedKernel = new Proxy({} as KernelHandle, {
  get: () => () => {
    throw new Error('not used');
  },
});

/** A tool that runs until its signal aborts, then tells `onAbort` and answers `text`. */
function untilAborted(name: string, text: string, onAbort: (signal: AbortSignal) => void = () => undefined): Tool<never> {
  const tool: Tool<Record<string, never>> = {
    name,
    description: 'x',
    inputSchema: z.strictObject({}),
    requires: () => [],
    execute: (_input, context) =>
      new Promise((resolve) => {
        context.signal.addEventListener('abort', () => {
          onAbort(context.signal);
          resolve({ text });
        });
      }),
  };
  return tool as unknown as Tool<never>;
}

function agent(capabilities: Capability[], execPolicy: Partial<ToolAgent['execPolicy']> = {}): ToolAgent {
  return {
    id: 'agent-1',
    name: 'tester',
    workspace: '/tmp/loom-tool-runner',
    capabilities,
    execPolicy: { allow_shell: true, allow_network: true, allow_file_write: true, ...execPolicy },
    depth: 0,
    chain: [],
  };
}

/** A tool that needs a net_connect for its host and reports whether it ran. */
function hostTool(onRun: () => void): Tool<{ host: string }> {
  return {
    name: 'ping',
    description: 'Pings a host',
    inputSchema: z.strictObject({ host: z.string() }),
    requires: (input) => [{ kind: 'net_connect', pattern: input.host }],
    execute: (input) => {
      onRun();
      return Promise.resolve({ text: `pong from ${input.host}` });
    },
  };
}

function setup(tools: Tool<never>[]) {
  const clock = createFakeClock();
  const audit: ToolAuditEntry[] = [];
  const runner = createToolRunner({
    tools,
    kernel: unusedKernel,
    clock,
    logger: createSilentLogger(),
    env: {},
    audit: (entry) => {
      audit.push(entry);
      return Promise.resolve();
    },
  });
  return { runner, clock, audit };
}

const call = (toolName: string, input: unknown) => ({ toolCallId: 'c1', toolName, input });
const options = (forAgent: ToolAgent, filter: { allowlist: string[]; blocklist: string[] } = { allowlist: [], blocklist: [] }) => ({
  agent: forAgent,
  filter,
  settings: {},
  signal: new AbortController().signal,
});

describe('the tool runner', () => {
  it('refuses, in a step limited to less, a tool or a capability the agent holds but the limit leaves out, and runs what it allows', async () => {
    let runs = 0;
    const { runner, audit } = setup([hostTool(() => (runs += 1)) as unknown as Tool<never>]);
    const holder = agent([
      { kind: 'tool_invoke', pattern: 'ping' },
      { kind: 'net_connect', pattern: '*' },
    ]);

    const noTool = await runner.run(call('ping', { host: 'a.example' }), options({ ...holder, limit: [] }));
    expect(noTool.result).toMatchObject({ isError: true, text: 'agent "tester" may not call ping in this step: the step is limited to the tools it names' });
    expect(runner.toolsFor({ ...holder, limit: [] }, { allowlist: [], blocklist: [] })).toEqual([]);

    const limited = {
      ...holder,
      limit: [
        { kind: 'tool_invoke', pattern: 'ping' },
        { kind: 'net_connect', pattern: 'a.example' },
      ] satisfies Capability[],
    };
    const wrongHost = await runner.run(call('ping', { host: 'b.example' }), options(limited));
    expect(wrongHost.result).toMatchObject({
      isError: true,
      text: 'agent "tester" may not use [capabilities].network "b.example" in this step: the step is limited to what it names',
    });
    expect((await runner.run(call('ping', { host: 'a.example' }), options(limited))).result).toMatchObject({ text: 'pong from a.example' });
    expect(runs).toBe(1);
    expect(audit.map((entry) => entry.outcome)).toEqual(['denied', 'denied']);
  });

  it('runs a call whose tool and capabilities are granted', async () => {
    let ran = 0;
    const { runner } = setup([hostTool(() => (ran += 1)) as unknown as Tool<never>]);
    const outcome = await runner.run(
      call('ping', { host: 'api.example.com' }),
      options(
        agent([
          { kind: 'tool_invoke', pattern: 'ping' },
          { kind: 'net_connect', pattern: '*.example.com' },
        ]),
      ),
    );
    expect(outcome.result).toEqual({ text: 'pong from api.example.com' });
    expect(ran).toBe(1);
  });

  it('refuses a tool the agent holds no tool_invoke for, without running it, and audits it', async () => {
    let ran = 0;
    const { runner, audit } = setup([hostTool(() => (ran += 1)) as unknown as Tool<never>]);
    const outcome = await runner.run(call('ping', { host: 'a' }), options(agent([])));
    expect(outcome.result).toEqual({ isError: true, text: 'agent "tester" may not call ping: add "ping" to [capabilities].tools' });
    expect(ran).toBe(0);
    expect(audit).toMatchObject([{ tool: 'ping', outcome: 'denied', agentName: 'tester' }]);
  });

  it('refuses a call whose input needs an ungranted capability, and says what would allow it', async () => {
    let ran = 0;
    const { runner } = setup([hostTool(() => (ran += 1)) as unknown as Tool<never>]);
    const outcome = await runner.run(
      call('ping', { host: 'evil.test' }),
      options(
        agent([
          { kind: 'tool_invoke', pattern: 'ping' },
          { kind: 'net_connect', pattern: '*.example.com' },
        ]),
      ),
    );
    expect(outcome.result.isError).toBe(true);
    expect(outcome.result.text).toBe(
      'agent "tester" is not granted [capabilities].network "evil.test"; to allow it, add "evil.test" to [capabilities].network',
    );
    expect(ran).toBe(0);
  });

  it('suggests a broader shell pattern when a command is refused', async () => {
    const shellTool: Tool<{ command: string }> = {
      name: 'shell_exec',
      description: 'x',
      inputSchema: z.strictObject({ command: z.string() }),
      requires: (input) => [{ kind: 'shell_exec', pattern: input.command }],
      execute: () => Promise.resolve({ text: 'ran' }),
    };
    const { runner } = setup([shellTool as unknown as Tool<never>]);
    const outcome = await runner.run(call('shell_exec', { command: 'git status' }), options(agent([{ kind: 'tool_invoke', pattern: 'shell_exec' }])));
    expect(outcome.result.text).toContain('add "git status" or "git **" to [capabilities].shell');
  });

  it('refuses file_write when [exec_policy].allow_file_write is false, even inside the workspace', async () => {
    let ran = 0;
    const writer: Tool<{ path: string }> = {
      name: 'file_write',
      description: 'x',
      inputSchema: z.strictObject({ path: z.string() }),
      requires: () => [], // a workspace path needs no grant
      execute: () => {
        ran += 1;
        return Promise.resolve({ text: 'written' });
      },
    };
    const { runner } = setup([writer as unknown as Tool<never>]);
    const outcome = await runner.run(
      call('file_write', { path: 'a.txt' }),
      options(agent([{ kind: 'tool_invoke', pattern: 'file_write' }], { allow_file_write: false })),
    );
    expect(outcome.result.text).toBe('agent "tester" may not call file_write: [exec_policy].allow_file_write is false');
    expect(ran).toBe(0);
  });

  it('gives the model an error naming the field when the input is invalid', async () => {
    const { runner, audit } = setup([hostTool(() => undefined) as unknown as Tool<never>]);
    const outcome = await runner.run(call('ping', { host: 42 }), options(agent([{ kind: 'tool_invoke', pattern: 'ping' }])));
    expect(outcome.result).toEqual({ isError: true, text: 'invalid input for ping: host: expected a string, got 42' });
    expect(audit[0]?.outcome).toBe('invalid');
  });

  it('gives the model an error for an unknown tool', async () => {
    const { runner } = setup([]);
    const outcome = await runner.run(call('teleport', {}), options(agent([{ kind: 'tool_all' }])));
    expect(outcome.result.isError).toBe(true);
    expect(outcome.result.text).toContain('unknown tool "teleport"');
  });

  it('turns a tool that throws into an error result', async () => {
    const thrower: Tool<Record<string, never>> = {
      name: 'boom',
      description: 'x',
      inputSchema: z.strictObject({}),
      requires: () => [],
      execute: () => Promise.reject(new Error('disk on fire')),
    };
    const { runner } = setup([thrower as unknown as Tool<never>]);
    const outcome = await runner.run(call('boom', {}), options(agent([{ kind: 'tool_all' }])));
    expect(outcome.result).toEqual({ isError: true, text: 'boom failed: disk on fire' });
  });

  it('times a tool out on the clock, aborting its signal, after [tools.<name>].timeout_seconds', async () => {
    let aborted = false;
    const sleeper = untilAborted('sleeper', 'woke up', () => {
      aborted = true;
    });
    const { runner, clock, audit } = setup([sleeper]);
    const pending = runner.run(call('sleeper', {}), { ...options(agent([{ kind: 'tool_all' }])), settings: { sleeper: { timeout_seconds: 5 } } });
    await clock.advance(4_999);
    expect(aborted).toBe(false);
    await clock.advance(1);
    const outcome = await pending;
    expect(aborted).toBe(true);
    expect(outcome.result).toEqual({ isError: true, text: 'tool "sleeper" timed out after 5 s' });
    expect(outcome.failure).toEqual({ kind: 'timeout' });
    expect(audit).toMatchObject([{ tool: 'sleeper', outcome: 'timeout' }]);
  });

  it("tells how a call ended apart from its text: refused, thrown (with the error), or the tool's own error result", async () => {
    const thrown = new Error('the disk is on fire');
    const tools = [
      { name: 'thrower', description: 'x', inputSchema: z.strictObject({}), requires: () => [], execute: () => Promise.reject(thrown) },
      // Its own error text reads like the runner's timeout; it is the tool's answer all the same.
      {
        name: 'fetcher',
        description: 'x',
        inputSchema: z.strictObject({}),
        requires: () => [],
        execute: () => Promise.resolve({ text: 'the host timed out after 30 s', isError: true }),
      },
    ] as unknown as Tool<never>[];
    const { runner, audit } = setup(tools);
    const holder = agent([{ kind: 'tool_all' }]);
    const threw = await runner.run(call('thrower', {}), options(holder));
    expect(threw).toEqual({ result: { isError: true, text: 'thrower failed: the disk is on fire' }, failure: { kind: 'threw', error: thrown } });
    expect(await runner.run(call('fetcher', {}), options(holder))).toEqual({ result: { isError: true, text: 'the host timed out after 30 s' } });
    expect(await runner.run(call('nothing', {}), options(holder))).toMatchObject({ failure: { kind: 'refused' } });
    expect(await runner.run(call('fetcher', {}), options(agent([])))).toMatchObject({ failure: { kind: 'refused' } });
    // The tool's own "timed out" answer is a finished call, not a timeout of the runner's.
    expect(audit.map((entry) => entry.outcome)).toEqual(['denied']);
  });

  it("aborts a running tool with the turn's reason when the turn is cancelled, and leaves no listener on the turn's signal", async () => {
    const reasons: unknown[] = [];
    const waiter = untilAborted('waiter', 'stopped', (signal) => reasons.push(signal.reason));
    const quick: Tool<Record<string, never>> = {
      name: 'quick',
      description: 'x',
      inputSchema: z.strictObject({}),
      requires: () => [],
      execute: () => Promise.resolve({ text: 'done' }),
    };
    const { runner, clock } = setup([waiter, quick as unknown as Tool<never>]);
    const turn = new AbortController();
    const forAgent = { ...options(agent([{ kind: 'tool_all' }])), signal: turn.signal };
    for (let index = 0; index < 20; index += 1) expect((await runner.run(call('quick', {}), forAgent)).result.text).toBe('done');
    expect(getEventListeners(turn.signal, 'abort')).toHaveLength(0);
    const pending = runner.run(call('waiter', {}), forAgent);
    await clock.advance(1_000);
    const cancelled = new Error('the turn was cancelled');
    turn.abort(cancelled);
    expect((await pending).result).toEqual({ isError: true, text: 'tool "waiter" was cancelled' });
    expect(reasons).toEqual([cancelled]);
  });

  it('uses the 60 s default timeout', async () => {
    const sleeper = untilAborted('sleeper', 'late');
    const { runner, clock } = setup([sleeper]);
    const pending = runner.run(call('sleeper', {}), options(agent([{ kind: 'tool_all' }])));
    await clock.advance(59_999);
    await clock.advance(1);
    expect((await pending).result.text).toBe('tool "sleeper" timed out after 60 s');
  });

  it('caps long output at 50,000 characters with the marker', async () => {
    const talker: Tool<Record<string, never>> = {
      name: 'talker',
      description: 'x',
      inputSchema: z.strictObject({}),
      requires: () => [],
      execute: () => Promise.resolve({ text: 'x'.repeat(125_432) }),
    };
    const { runner } = setup([talker as unknown as Tool<never>]);
    const outcome = await runner.run(call('talker', {}), options(agent([{ kind: 'tool_all' }])));
    expect(outcome.result.text.startsWith('x'.repeat(50_000))).toBe(true);
    expect(outcome.result.text).toContain('[Output truncated: 125,432 characters → 50,000 characters]');
  });

  it("passes the loop guard's verdicts on: a hint at the third identical call, a refusal at the fifth", async () => {
    let ran = 0;
    const { runner } = setup([hostTool(() => (ran += 1)) as unknown as Tool<never>]);
    const guarded = {
      ...options(
        agent([
          { kind: 'tool_invoke', pattern: 'ping' },
          { kind: 'net_connect', pattern: '*' },
        ]),
      ),
      loopGuard: createLoopGuard(),
    };
    const outcomes = [];
    for (let index = 0; index < 5; index += 1) outcomes.push(await runner.run(call('ping', { host: 'a.example.com' }), guarded));
    expect(outcomes[2]?.hint).toBeDefined();
    expect(outcomes[4]?.result.isError).toBe(true);
    expect(ran).toBe(4);
  });

  it('refuses a tool the blocklist or allowlist leaves out even when the model names it', async () => {
    let ran = 0;
    const { runner, audit } = setup([hostTool(() => (ran += 1)) as unknown as Tool<never>]);
    const forAgent = agent([
      { kind: 'tool_invoke', pattern: 'ping' },
      { kind: 'net_connect', pattern: '*' },
    ]);
    const blocked = await runner.run(call('ping', { host: 'a' }), options(forAgent, { allowlist: [], blocklist: ['ping'] }));
    const notAllowed = await runner.run(call('ping', { host: 'a' }), options(forAgent, { allowlist: ['other'], blocklist: [] }));
    expect(blocked.result).toEqual({
      isError: true,
      text: 'agent "tester" may not call ping: its tool_allowlist, tool_blocklist or mcp_servers leaves it out',
    });
    expect(notAllowed.result.isError).toBe(true);
    expect(ran).toBe(0);
    expect(audit.map((entry) => entry.outcome)).toEqual(['denied', 'denied']);
  });

  it("leaves out an MCP server's tools when the agent's mcp_servers allowlist does not name the server", async () => {
    const fromGithub = { ...hostTool(() => undefined), name: 'mcp_github_search', mcpServer: 'github' } as unknown as Tool<never>;
    const fromFiles = { ...hostTool(() => undefined), name: 'mcp_files_read', mcpServer: 'files' } as unknown as Tool<never>;
    const { runner } = setup([fromGithub, fromFiles]);
    const forAgent = agent([{ kind: 'tool_all' }]);
    expect(runner.toolsFor(forAgent, { allowlist: [], blocklist: [], mcpServers: [] }).map((tool) => tool.name)).toEqual([
      'mcp_github_search',
      'mcp_files_read',
    ]);
    expect(runner.toolsFor(forAgent, { allowlist: [], blocklist: [], mcpServers: ['files'] }).map((tool) => tool.name)).toEqual(['mcp_files_read']);
    const refused = await runner.run(call('mcp_github_search', { host: 'a' }), {
      ...options(forAgent),
      filter: { allowlist: [], blocklist: [], mcpServers: ['files'] },
    });
    expect(refused.result.isError).toBe(true);
  });

  it("keeps a limited step to the MCP servers it names, though its name pattern also matches another server's tools", async () => {
    let ran = 0;
    const fromSlack = { ...hostTool(() => (ran += 1)), name: 'mcp_slack_post', mcpServer: 'slack' } as unknown as Tool<never>;
    const fromNotifier = { ...hostTool(() => (ran += 1)), name: 'mcp_slack_notifier_post', mcpServer: 'slack-notifier' } as unknown as Tool<never>;
    const { runner, audit } = setup([fromSlack, fromNotifier]);
    // A package step naming "slack": its limit's pattern mcp_slack_* matches both servers' tools.
    const step: ToolAgent = {
      ...agent([{ kind: 'tool_all' }, { kind: 'net_connect', pattern: '*' }]),
      limit: [
        { kind: 'tool_invoke', pattern: 'mcp_slack_*' },
        { kind: 'net_connect', pattern: '*' },
      ],
      limitMcpServers: ['slack'],
    };
    expect(runner.toolsFor(step, { allowlist: [], blocklist: [] }).map((tool) => tool.name)).toEqual(['mcp_slack_post']);
    const refused = await runner.run(call('mcp_slack_notifier_post', { host: 'a' }), options(step));
    expect(refused.result).toEqual({
      isError: true,
      text: 'agent "tester" may not call mcp_slack_notifier_post in this step: it is a tool of MCP server "slack-notifier", and the step uses only the servers it names ("slack")',
    });
    expect((await runner.run(call('mcp_slack_post', { host: 'a' }), options(step))).result).toEqual({ text: 'pong from a' });
    expect(ran).toBe(1);
    expect(audit.map((entry) => entry.outcome)).toEqual(['denied']);
  });

  it('checks the grants the agent holds now, not the ones it started the turn with', async () => {
    let ran = 0;
    let current: Capability[] = [
      { kind: 'tool_invoke', pattern: 'ping' },
      { kind: 'net_connect', pattern: '*' },
    ];
    const runner = createToolRunner({
      tools: [hostTool(() => (ran += 1)) as unknown as Tool<never>],
      kernel: unusedKernel,
      clock: createFakeClock(),
      logger: createSilentLogger(),
      env: {},
      audit: () => Promise.resolve(),
      grants: () => current,
    });
    const forAgent = agent(current);
    expect((await runner.run(call('ping', { host: 'a' }), options(forAgent))).result.isError).toBeUndefined();
    current = []; // revoked (the agent was killed)
    expect((await runner.run(call('ping', { host: 'a' }), options(forAgent))).result.isError).toBe(true);
    expect(ran).toBe(1);
  });

  it('runs nothing once the turn is cancelled', async () => {
    let ran = 0;
    const { runner } = setup([hostTool(() => (ran += 1)) as unknown as Tool<never>]);
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    const forAgent = agent([{ kind: 'tool_all' }, { kind: 'net_connect', pattern: '*' }]);
    await expect(runner.run(call('ping', { host: 'a' }), { ...options(forAgent), signal: controller.signal })).rejects.toThrow('cancelled');
    expect(ran).toBe(0);
  });

  it('shows the model only the tools the agent may call, after the allowlist and blocklist', () => {
    const tools = ['a', 'b', 'c'].map((name) => ({ ...hostTool(() => undefined), name })) as unknown as Tool<never>[];
    const { runner } = setup(tools);
    const forAgent = agent([
      { kind: 'tool_invoke', pattern: 'a' },
      { kind: 'tool_invoke', pattern: 'b' },
    ]);
    expect(runner.toolsFor(forAgent, { allowlist: [], blocklist: [] }).map((tool) => tool.name)).toEqual(['a', 'b']);
    expect(runner.toolsFor(forAgent, { allowlist: ['b', 'c'], blocklist: [] }).map((tool) => tool.name)).toEqual(['b']);
    expect(runner.toolsFor(forAgent, { allowlist: [], blocklist: ['a'] }).map((tool) => tool.name)).toEqual(['b']);
  });
});

describe("an agent's own tools that repeat a name", () => {
  it('shows the model one tool of the name, the first, and a call of it runs that one (a stray duplicate never shadows it)', async () => {
    const ran: string[] = [];
    const named = (who: string): Tool<never> =>
      ({
        name: 'lookup',
        description: `${who}'s lookup`,
        inputSchema: z.strictObject({}),
        requires: () => [],
        execute: () => (ran.push(who), Promise.resolve({ text: who })),
      }) as unknown as Tool<never>;
    const runner = createToolRunner({
      tools: [],
      agentTools: () => [named('own'), named('shared')],
      kernel: unusedKernel,
      clock: createFakeClock(),
      logger: createSilentLogger(),
      env: {},
      audit: () => Promise.resolve(),
    });
    const forAgent = agent([{ kind: 'tool_invoke', pattern: 'lookup' }]);
    expect(runner.toolsFor(forAgent, { allowlist: [], blocklist: [] }).map((tool) => tool.description)).toEqual(["own's lookup"]);
    expect((await runner.run(call('lookup', {}), options(forAgent))).result.text).toBe('own');
    expect(ran).toEqual(['own']);
  });
});
