/**
 * A forged tool's name stands for one tool per agent: a tool shared from one agent never takes
 * the place of another agent's own tool of that name (which would then run the sharer's code with
 * the caller's grants), and no model is offered two tools of one name.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForgedToolView, ForgeOutcome } from '../../src/forged-tools/index.ts';
import { APPROVE } from '../support/forge-requests.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

const config = (): Record<string, unknown> => ({ default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });

beforeEach(async () => {
  dir = await makeTempDir('loom-forged-names-');
  host = await openTestHost(dir.path, config());
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const model = (): string => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

/** alice and bob forge (sources kept, so tools outlive the session tier); bob is also granted the name "lookup", carol only that. */
async function spawnAgents(): Promise<void> {
  await host.kernel.spawn(manifest(`name = "alice"\n${model()}[capabilities]\ntools = ["forge_tool"]\n[emergent]\npersist_sandbox_source = true\n`));
  await host.kernel.spawn(manifest(`name = "bob"\n${model()}[capabilities]\ntools = ["forge_tool", "lookup"]\n[emergent]\npersist_sandbox_source = true\n`));
  await host.kernel.spawn(manifest(`name = "carol"\n${model()}[capabilities]\ntools = ["lookup"]\n`));
}

/** A sandbox tool "lookup" that says whose it is. */
const lookup = (who: string): Record<string, unknown> => ({
  name: 'lookup',
  description: `Says whose lookup this is: ${who}'s`,
  inputSchema: { type: 'object', properties: {} },
  implementation: { mode: 'sandbox', code: `function execute(input) { return { who: ${JSON.stringify(who)} }; }`, allowlist: [] },
  testCases: [{ input: {}, expectedOutput: { who } }],
});

function registered(outcome: ForgeOutcome): ForgedToolView {
  if (!outcome.ok) throw new Error(`expected the tool to be registered, got a refusal at ${outcome.stage}: ${outcome.reason}`);
  return outcome.tool;
}

/** Forges alice's lookup and has the panel promote it to the agent tier. */
async function aliceAgentTool(): Promise<ForgedToolView> {
  server.script([APPROVE]);
  const tool = registered(await host.kernel.forgedTools.forge('alice', lookup('alice'), 'test'));
  server.script([APPROVE, APPROVE]);
  expect(await host.kernel.forgedTools.promote(tool.id, 'local')).toMatchObject({ outcome: 'promoted' });
  return tool;
}

async function bobTool(): Promise<ForgedToolView> {
  server.script([APPROVE]);
  return registered(await host.kernel.forgedTools.forge('bob', lookup('bob'), 'test'));
}

/** What `agent`'s model got back when it called "lookup" in a turn, and the descriptions of the tools named "lookup" it was offered. */
async function lookupAs(agent: string): Promise<{ result: string; offered: string[] }> {
  server.script([{ toolCalls: [{ name: 'lookup', input: {} }] }, { text: 'done' }]);
  const before = server.requests.length;
  await host.kernel.send(agent, 'look it up');
  const first = server.requests[before]?.body as { tools?: { function: { name: string; description: string } }[] };
  const last = server.requests.at(-1)?.body as { messages: { role: string; content: unknown }[] };
  const content = last.messages.filter((message) => message.role === 'tool').at(-1)?.content;
  return {
    result: typeof content === 'string' ? content : JSON.stringify(content),
    offered: (first.tools ?? []).filter((tool) => tool.function.name === 'lookup').map((tool) => tool.function.description),
  };
}

describe('sharing a forged tool', () => {
  it("refuses, when asked, to share a tool whose name another agent's own tool has (which sharing would shadow), naming that agent; bob keeps calling his own", async () => {
    await spawnAgents();
    const alice = await aliceAgentTool();
    const bob = await bobTool();
    expect((await lookupAs('bob')).result).toBe('{"who":"bob"}');

    const asked = await host.kernel.forgedTools.promote(alice.id, 'local');
    expect(asked).toMatchObject({ outcome: 'refused', tool: { tier: 'agent' } });
    expect(asked.reason).toContain(`cannot share "lookup": agent "bob" has a tool of that name (${bob.id}, session tier)`);
    expect(asked.reason).toContain('loom tools demote');
    expect(await host.kernel.approvals.list('pending')).toEqual([]);
    expect((await lookupAs('bob')).result).toBe('{"who":"bob"}');
  });

  it("checks again when the person's approval lands: a tool of that name forged while the request waited keeps it from being shared", async () => {
    await spawnAgents();
    const alice = await aliceAgentTool();
    const asked = await host.kernel.forgedTools.promote(alice.id, 'local');
    expect(asked.outcome).toBe('pending-approval');
    // alice's lookup is not shared yet, so bob may forge his own.
    const bob = await bobTool();

    await host.kernel.approvals.decide(asked.approvalId as string, { approved: true, by: 'owner', reason: null });
    const refusals = async (): Promise<unknown[]> =>
      (await host.kernel.audit({ agent: 'alice', type: 'tool-promote' }))
        .filter((entry) => entry.data['outcome'] === 'refused')
        .map((entry) => entry.data['reason']);
    await expect.poll(refusals).toHaveLength(1);
    expect((await refusals())[0]).toContain(`cannot share "lookup": agent "bob" has a tool of that name (${bob.id}, session tier)`);
    expect(await host.kernel.forgedTools.get(alice.id)).toMatchObject({ tier: 'agent', status: 'active' });
    expect((await lookupAs('bob')).result).toBe('{"who":"bob"}');
  });

  it('refuses to register a tool whose name was shared while it was being judged', async () => {
    await spawnAgents();
    const alice = await aliceAgentTool();
    const asked = await host.kernel.forgedTools.promote(alice.id, 'local');
    let judged = (): void => undefined;
    const gate = new Promise<void>((resolve) => (judged = resolve));
    server.script([{ ...APPROVE, gate }]);
    const before = server.requests.length;
    const forging = host.kernel.forgedTools.forge('bob', lookup('bob'), 'test');
    await expect.poll(() => server.requests.length).toBe(before + 1);

    await host.kernel.approvals.decide(asked.approvalId as string, { approved: true, by: 'owner', reason: null });
    await expect.poll(async () => (await host.kernel.forgedTools.get(alice.id)).tier).toBe('shared');
    judged();
    const outcome = await forging;
    expect(outcome).toMatchObject({ ok: false, stage: 'request' });
    expect(outcome.ok ? '' : outcome.reason).toContain('a tool named "lookup" was shared by agent "alice" while this one was being built');
    expect((await host.kernel.forgedTools.list({ agent: 'bob' })).filter((tool) => tool.status === 'active')).toEqual([]);
  });
});

describe("a shared tool and an agent's own of one name, stored before sharing checked names", () => {
  it("offers each model one tool of the name: bob's own for bob, the shared one to an agent without its own", async () => {
    await spawnAgents();
    const alice = await aliceAgentTool();
    await bobTool();
    // The state sharing led to before it checked names: alice's lookup shared beside bob's.
    const stored = await host.store.forgedTools.get(alice.id);
    await host.store.forgedTools.put({ ...(stored as NonNullable<typeof stored>), tier: 'shared' });
    await host.close();
    host = await openTestHost(dir.path, config());

    // The tool a model is shown is the one its call runs.
    expect(await lookupAs('bob')).toEqual({ offered: ["[forged sandbox tool] Says whose lookup this is: bob's"], result: '{"who":"bob"}' });
    expect(await lookupAs('carol')).toEqual({ offered: ["[forged sandbox tool] Says whose lookup this is: alice's"], result: '{"who":"alice"}' });
  });
});
