import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentNameTakenError, AgentNotFoundError, CapabilityDeniedError, CapabilityEscalationError } from '../../src/errors/index.ts';
import type { KernelEvent } from '../../src/kernel/index.ts';
import { makeTempDir, manifest, openTestKernel, recordingHook, type TestKernel } from '../support/test-kernel.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const PARENT = `name = "coordinator"
[capabilities]
tools = ["web_fetch", "file_read"]
network = ["*.wikipedia.org"]
file_read = ["/data/*"]
agent_spawn = true
llm_max_tokens = 1000
`;

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let databasePath: string;
let open: TestKernel[];

async function boot(hooks: Parameters<typeof openTestKernel>[1] = []): Promise<TestKernel> {
  const test = await openTestKernel(databasePath, hooks);
  open.push(test);
  return test;
}

beforeEach(async () => {
  dir = await makeTempDir();
  databasePath = join(dir.path, 'data', 'loom.db');
  open = [];
});

afterEach(async () => {
  for (const test of open) await test.close().catch(() => undefined);
  await dir.remove();
});

describe('kernel.spawn()', () => {
  it('gives the agent UUID v4 ids, a stored session and a running state', async () => {
    const { kernel, store } = await boot();
    const view = await kernel.spawn(manifest('name = "researcher"'));
    expect(view.id).toMatch(UUID_V4);
    expect(view.session_id).toMatch(UUID_V4);
    expect(view.id).not.toBe(view.session_id);
    expect(view).toMatchObject({ name: 'researcher', state: 'running', parent: null, children: [] });
    expect(await store.sessions.get(view.session_id)).toMatchObject({ agentId: view.id, messages: [] });
  });

  it('grants the manifest capabilities and nothing else', async () => {
    const { kernel } = await boot();
    const view = await kernel.spawn(manifest(PARENT));
    expect(kernel.capabilities.check(view.id, { kind: 'tool_invoke', pattern: 'web_fetch' })).toBe(true);
    expect(kernel.capabilities.check(view.id, { kind: 'net_connect', pattern: 'en.wikipedia.org:443' })).toBe(true);
    expect(kernel.capabilities.check(view.id, { kind: 'tool_invoke', pattern: 'shell_exec' })).toBe(false);
    expect(kernel.capabilities.check(view.id, { kind: 'shell_exec', pattern: 'ls' })).toBe(false);
    expect(() => kernel.capabilities.require(view.id, view.name, { kind: 'net_connect', pattern: 'evil.example.com' })).toThrow(CapabilityDeniedError);
  });

  it('publishes agent-spawn on the bus and records it in the event log', async () => {
    const { kernel, store, clock } = await boot();
    const seen: KernelEvent[] = [];
    kernel.events.subscribe((event) => seen.push(event));
    const view = await kernel.spawn(manifest('name = "a"'));
    expect(seen).toEqual([{ type: 'agent-spawn', at: clock.now(), agentId: view.id, name: 'a', parentId: null }]);
    const logged = await store.events.list({ type: 'agent-spawn' });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ agentId: view.id, data: { name: 'a', parentId: null } });
  });

  it('refuses a second live agent with the same name and stores nothing', async () => {
    const { kernel, store } = await boot();
    const first = await kernel.spawn(manifest('name = "dup"'));
    await expect(kernel.spawn(manifest('name = "dup"'))).rejects.toThrow(AgentNameTakenError);
    await expect(kernel.spawn(manifest('name = "dup"'))).rejects.toThrow(`an agent with that name already exists (id ${first.id})`);
    expect((await store.agents.list()).map((record) => record.id)).toEqual([first.id]);
  });

  it('lets only one of two concurrent spawns of one name succeed', async () => {
    const { kernel, store } = await boot();
    const results = await Promise.allSettled([kernel.spawn(manifest('name = "race"')), kernel.spawn(manifest('name = "race"'))]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((result) => result.status === 'rejected')).toHaveLength(1);
    expect(await store.agents.list()).toHaveLength(1);
  });

  it('refuses a name another process took since this kernel booted', async () => {
    const mine = await boot();
    const other = await boot();
    await other.kernel.spawn(manifest('name = "taken"'));
    await expect(mine.kernel.spawn(manifest('name = "taken"'))).rejects.toThrow(AgentNameTakenError);
  });

  it('links a child to its parent when the parent covers every child capability', async () => {
    const { kernel } = await boot();
    const parent = await kernel.spawn(manifest(PARENT));
    const child = await kernel.spawn(
      manifest('name = "helper"\n[capabilities]\ntools = ["web_fetch"]\nnetwork = ["en.wikipedia.org"]\nfile_read = ["/data/reports/*"]\nllm_max_tokens = 500'),
      { parent: 'coordinator' },
    );
    expect(child.parent).toBe(parent.id);
    expect(kernel.get('coordinator').children).toEqual([child.id]);
  });

  it('refuses a child with more capabilities than its parent, naming each, and stores nothing', async () => {
    const { kernel, store } = await boot();
    await kernel.spawn(manifest(PARENT));
    const attempt = kernel.spawn(manifest('name = "rogue"\n[capabilities]\nshell = ["*"]\nfile_read = ["/etc/*"]'), { parent: 'coordinator' });
    await expect(attempt).rejects.toThrow(CapabilityEscalationError);
    await expect(kernel.spawn(manifest('name = "rogue"\n[capabilities]\nshell = ["*"]\nfile_read = ["/etc/*"]'), { parent: 'coordinator' })).rejects.toThrow(
      /^cannot spawn agent "rogue" as a child of "coordinator": .*\[capabilities\]\.shell "\*".*\[capabilities\]\.file_read "\/etc\/\*"/,
    );
    expect((await store.agents.list()).map((record) => record.name)).toEqual(['coordinator']);
    expect(kernel.list().map((view) => view.name)).toEqual(['coordinator']);
  });

  it("refuses a child whose token cap exceeds the parent's", async () => {
    const { kernel } = await boot();
    await kernel.spawn(manifest(PARENT));
    await expect(kernel.spawn(manifest('name = "big"\n[capabilities]\nllm_max_tokens = 5000'), { parent: 'coordinator' })).rejects.toThrow(/llm_max_tokens/);
  });

  it("runs a child that sets no token cap under its parent's cap", async () => {
    const { kernel } = await boot();
    await kernel.spawn(manifest(PARENT));
    const child = await kernel.spawn(manifest('name = "uncapped"\n[capabilities]\ntools = ["file_read"]'), { parent: 'coordinator' });
    expect(child.capabilities).toContainEqual({ kind: 'llm_max_tokens', max_tokens: 1000 });
    expect(kernel.get('uncapped').manifest.capabilities.llm_max_tokens).toBe(1000);
    expect(kernel.capabilities.check(child.id, { kind: 'llm_max_tokens', max_tokens: 1001 })).toBe(false);
  });

  it('refuses an unknown parent', async () => {
    const { kernel } = await boot();
    await expect(kernel.spawn(manifest('name = "orphan"'), { parent: 'nobody' })).rejects.toThrow(AgentNotFoundError);
    expect(kernel.list()).toEqual([]);
  });

  it('tells lifecycle hooks that the agent started', async () => {
    const hook = recordingHook();
    const { kernel } = await boot([hook]);
    await kernel.spawn(manifest('name = "a"'));
    expect(hook.calls).toEqual(['start:a']);
  });
});

describe('kernel.get() and list()', () => {
  it('finds an agent by name or by id', async () => {
    const { kernel } = await boot();
    const view = await kernel.spawn(manifest('name = "finder"'));
    expect(kernel.get('finder').id).toBe(view.id);
    expect(kernel.get(view.id).name).toBe('finder');
    expect(kernel.get('finder').manifest.name).toBe('finder');
    expect(() => kernel.get('nobody')).toThrow('no agent named or with id "nobody"');
  });

  it('lists agents in spawn order', async () => {
    const { kernel } = await boot();
    for (const name of ['c', 'a', 'b']) await kernel.spawn(manifest(`name = "${name}"`));
    expect(kernel.list().map((view) => view.name)).toEqual(['c', 'a', 'b']);
  });
});

describe('suspend and resume', () => {
  it('persist the state, stop and start the agent, and publish events', async () => {
    const hook = recordingHook();
    const { kernel, store } = await boot([hook]);
    const view = await kernel.spawn(manifest('name = "sleepy"'));
    const types: string[] = [];
    kernel.events.subscribe((event) => types.push(event.type));

    expect((await kernel.suspend('sleepy')).state).toBe('suspended');
    expect((await store.agents.get(view.id))?.state).toBe('suspended');
    expect((await kernel.resume(view.id)).state).toBe('running');
    expect((await store.agents.get(view.id))?.state).toBe('running');
    expect(hook.calls).toEqual(['start:sleepy', 'stop:sleepy:suspend', 'start:sleepy']);
    expect(types).toEqual(['agent-suspend', 'agent-resume']);
  });

  it('do nothing when the agent is already in that state', async () => {
    const hook = recordingHook();
    const { kernel } = await boot([hook]);
    await kernel.spawn(manifest('name = "steady"'));
    await kernel.resume('steady');
    await kernel.suspend('steady');
    await kernel.suspend('steady');
    expect(hook.calls).toEqual(['start:steady', 'stop:steady:suspend']);
  });

  it('refuse an unknown agent', async () => {
    const { kernel } = await boot();
    await expect(kernel.suspend('ghost')).rejects.toThrow(AgentNotFoundError);
  });
});

describe('kernel.kill()', () => {
  it('removes the agent and its descendants from the registry, capabilities and store, with their sessions', async () => {
    const { kernel, store } = await boot();
    await kernel.spawn(manifest(PARENT));
    const child = await kernel.spawn(manifest('name = "child"\n[capabilities]\nagent_spawn = true\ntools = ["file_read"]\nllm_max_tokens = 100'), {
      parent: 'coordinator',
    });
    const grandchild = await kernel.spawn(manifest('name = "grandchild"'), { parent: 'child' });
    const bystander = await kernel.spawn(manifest('name = "bystander"'));
    await store.memory.put({ agentId: child.id, key: 'self.note', value: 'x', updatedAt: 0 });

    const killed = await kernel.kill('coordinator');
    expect(killed.map((view) => view.name)).toEqual(['coordinator', 'child', 'grandchild']);
    expect(kernel.list().map((view) => view.name)).toEqual(['bystander']);
    expect((await store.agents.list()).map((record) => record.id)).toEqual([bystander.id]);
    expect(await store.sessions.get(child.session_id)).toBeUndefined();
    expect(await store.sessions.get(grandchild.session_id)).toBeUndefined();
    expect(await store.memory.list(child.id)).toEqual([]);
    expect(kernel.capabilities.check(child.id, { kind: 'tool_invoke', pattern: 'file_read' })).toBe(false);
  });

  it('records why each agent died and stops each once', async () => {
    const hook = recordingHook();
    const { kernel, store } = await boot([hook]);
    await kernel.spawn(manifest('name = "p"\n[capabilities]\nagent_spawn = true'));
    await kernel.spawn(manifest('name = "c"'), { parent: 'p' });
    await kernel.kill('p');
    const kills = await store.events.list({ type: 'agent-kill' });
    expect(kills.map((event) => [event.data['name'], event.data['reason']])).toEqual([
      ['p', 'requested'],
      ['c', 'parent-killed'],
    ]);
    expect(hook.calls.filter((call) => call.startsWith('stop:'))).toEqual(['stop:c:kill', 'stop:p:kill']);
  });

  it('frees the name for a new agent', async () => {
    const { kernel } = await boot();
    const first = await kernel.spawn(manifest('name = "phoenix"'));
    await kernel.kill('phoenix');
    const second = await kernel.spawn(manifest('name = "phoenix"'));
    expect(second.id).not.toBe(first.id);
  });

  it("removes a killed child from its parent's children", async () => {
    const { kernel } = await boot();
    await kernel.spawn(manifest('name = "p"\n[capabilities]\nagent_spawn = true'));
    await kernel.spawn(manifest('name = "c"'), { parent: 'p' });
    await kernel.kill('c');
    expect(kernel.get('p').children).toEqual([]);
  });
});

describe('kernel.boot()', () => {
  it('restores every agent after a restart: states, parents, children and capabilities', async () => {
    const first = await boot();
    const parent = await first.kernel.spawn(manifest(PARENT));
    const child = await first.kernel.spawn(manifest('name = "helper"\n[capabilities]\ntools = ["file_read"]\nllm_max_tokens = 100'), { parent: 'coordinator' });
    await first.kernel.spawn(manifest('name = "paused"'));
    await first.kernel.suspend('paused');
    await first.close();

    const hook = recordingHook();
    const second = await boot([hook]);
    expect(second.kernel.list().map((view) => [view.name, view.state])).toEqual([
      ['coordinator', 'running'],
      ['helper', 'running'],
      ['paused', 'suspended'],
    ]);
    expect(second.kernel.get('coordinator').children).toEqual([child.id]);
    expect(second.kernel.get('helper').parent).toBe(parent.id);
    expect(second.kernel.capabilities.check(child.id, { kind: 'tool_invoke', pattern: 'file_read' })).toBe(true);
    // Running agents come back running; suspended ones stay put.
    expect(hook.calls).toEqual(['start:coordinator', 'start:helper']);
  });

  it('keeps a shut-down agent running on the next boot', async () => {
    const hook = recordingHook();
    const first = await boot([hook]);
    await first.kernel.spawn(manifest('name = "daemonic"'));
    await first.close();
    expect(hook.calls).toEqual(['start:daemonic', 'stop:daemonic:shutdown']);
    const second = await boot();
    expect(second.kernel.get('daemonic').state).toBe('running');
  });

  it('skips and reports a stored agent whose manifest no longer validates, and restores the rest', async () => {
    const first = await boot();
    await first.kernel.spawn(manifest('name = "good"'));
    await first.store.agents.create(
      {
        id: '00000000-0000-4000-8000-000000000001',
        name: 'broken',
        state: 'running',
        parentId: null,
        sessionId: '00000000-0000-4000-8000-000000000002',
        manifest: { name: 'broken', priority: 'urgent' },
        createdAt: 0,
        updatedAt: 0,
      },
      { id: '00000000-0000-4000-8000-000000000002', agentId: '00000000-0000-4000-8000-000000000001', messages: [], createdAt: 0, updatedAt: 0 },
    );
    await first.close();
    const second = await openTestKernel(databasePath);
    open.push(second);
    expect(second.kernel.list().map((view) => view.name)).toEqual(['good']);
    expect(second.report.running).toBe(1);
    expect(second.report.skipped).toEqual([
      { id: '00000000-0000-4000-8000-000000000001', name: 'broken', problem: 'priority: expected one of low, normal, high, critical, got "urgent"' },
    ]);
  });

  it('restores an agent an earlier Loom stored with grants and triggers it ignored, which this one refuses at load, as it ran', async () => {
    const first = await boot();
    const stored = {
      name: 'legacy',
      capabilities: { tools: ['file_read'], net_listen: ['0.0.0.0:8080'], econ_earn: 5, ofp_discover: true },
      schedule: { mode: 'proactive', triggers: [{ event: 'agent_message' }, { event: 'file_created' }] },
    };
    await first.store.agents.create(
      {
        id: '00000000-0000-4000-8000-000000000003',
        name: 'legacy',
        state: 'running',
        parentId: null,
        sessionId: '00000000-0000-4000-8000-000000000004',
        manifest: stored,
        createdAt: 0,
        updatedAt: 0,
      },
      { id: '00000000-0000-4000-8000-000000000004', agentId: '00000000-0000-4000-8000-000000000003', messages: [], createdAt: 0, updatedAt: 0 },
    );
    await first.close();
    const second = await openTestKernel(databasePath);
    open.push(second);
    expect(second.report.skipped).toEqual([]);
    const legacy = second.kernel.get('legacy');
    expect(legacy.state).toBe('running');
    // Neither trigger ever fired, so the agent only ever answered messages: it is reactive now, as it was in fact.
    expect(legacy.manifest.schedule).toMatchObject({ mode: 'reactive', triggers: [] });
    expect(legacy.manifest.capabilities).toMatchObject({ tools: ['file_read'] });
    expect(Object.keys(legacy.manifest.capabilities)).not.toContain('net_listen');
    // Written today, the same grant is refused at load, naming the field.
    expect(() => manifest('name = "fresh"\n[capabilities]\nnet_listen = ["0.0.0.0:8080"]\n')).toThrow(/net_listen.*not supported by Loom/);
  });
});
