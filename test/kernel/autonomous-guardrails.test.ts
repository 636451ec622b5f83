import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { TEST_KEYS, openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-autonomous-');
  host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** A continuous agent woken every minute that may list agents, with `autonomous` as its `[autonomous]` table. */
const watcher = (autonomous: string): string =>
  `name = "watcher"\n[schedule]\nmode = "continuous"\ninterval_seconds = 60\n[autonomous]\n${autonomous}\n[capabilities]\ntools = ["agent_list"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

const list = { name: 'agent_list', input: {} };

/** Moves the clock a minute (one wake-up), then waits for the cycle's turn to be recorded. */
async function cycle(count: number): Promise<void> {
  await host.clock.advance(60_000);
  await waitFor(
    `cycle ${count} to finish`,
    async () => (await host.kernel.audit({ agent: 'watcher', types: ['turn-finish', 'turn-fail', 'turn-cancel'] })).length >= count,
  );
}

async function toolResults(): Promise<string[]> {
  const session = (await host.kernel.session('watcher')).messages as { role: string; content: unknown }[];
  return session
    .filter((message) => message.role === 'tool')
    .flatMap((message) => (message.content as { output: { value: string } }[]).map((part) => part.output.value));
}

describe('[autonomous] guardrails of an agent that runs unattended', () => {
  it("caps a cycle's tool calls at max_actions_per_cycle: the next is not run and the cycle ends; a person's message is not capped", async () => {
    await host.kernel.spawn(manifest(watcher('max_actions_per_cycle = 2')));
    server.script([{ toolCalls: [list, list, list] }, { toolCalls: [list, list, list] }, { text: 'listed three times' }]);
    await cycle(1);
    expect(server.requests).toHaveLength(1);
    const results = await toolResults();
    expect(results).toHaveLength(3);
    expect(results[2]).toBe('not run: this unattended cycle made its 2 tool calls ([autonomous].max_actions_per_cycle = 2); the cycle ends here');

    // The clock stands still: no wake-up comes before the person's message.
    expect((await host.kernel.send('watcher', 'list them all')).text).toBe('listed three times');
    expect((await toolResults()).slice(3).every((text) => !text.startsWith('not run'))).toBe(true);
  });

  it('caps the tool calls of an agent type with its own steps too: a chain-of-thought step that acts past the cap ends there', async () => {
    await host.kernel.spawn(
      manifest(
        `name = "watcher"\nmodule = "builtin:chain-of-thought"\n[schedule]\nmode = "continuous"\ninterval_seconds = 60\n[autonomous]\nmax_actions_per_cycle = 1\n[capabilities]\ntools = ["agent_list"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`,
      ),
    );
    const json = (value: unknown) => ({ text: JSON.stringify(value) });
    server.script([
      json({ complexity: 'simple', confidence: 0.2, needs_planning: true }),
      json({ steps: [{ id: 's1', prompt: 'list the agents twice', depends_on: [], can_parallelize: false, needs_tools: true }], rationale: 'one step' }),
      { toolCalls: [list, list] },
      json({ answer: 'listed', confidence: 0.9, gaps: [] }),
      { text: 'done' },
    ]);
    await cycle(1);
    // The step's loop ended after its first call: the synthesis is the next model call, and it reads why.
    expect(server.requests).toHaveLength(5);
    expect(JSON.stringify(server.requests[3]?.body)).toContain('this unattended cycle made its 1 tool calls ([autonomous].max_actions_per_cycle = 1)');
  });

  it('suspends an agent whose cycles take no action for idle_timeout_seconds, and records why', async () => {
    await host.kernel.spawn(manifest(watcher('idle_timeout_seconds = 150')));
    server.script([{ toolCalls: [list] }, { text: 'listed' }, { text: 'nothing' }, { text: 'nothing' }, { text: 'nothing' }, { text: 'nothing' }]);
    await cycle(1); // acts at 60 s
    await cycle(2); // idle since 60 s: 60 s
    await cycle(3); // 120 s
    expect(host.kernel.get('watcher').state).toBe('running');
    await cycle(4); // 180 s: past 150
    expect(host.kernel.get('watcher').state).toBe('suspended');
    const [suspended] = await host.kernel.audit({ agent: 'watcher', type: 'agent-suspend' });
    expect(suspended?.data['reason']).toBe('idle: its unattended cycles took no action for 180 s ([autonomous].idle_timeout_seconds = 150)');
    await host.clock.advance(600_000);
    expect(server.requests).toHaveLength(5);
  });
});
