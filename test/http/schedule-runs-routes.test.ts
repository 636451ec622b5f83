import { writeFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONTINUOUS_WAKE_MESSAGE } from '../../src/kernel/index.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type Api, startApi } from './api-harness.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-schedule-runs-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

function agentToml(name: string, schedule: string): string {
  return `name = "${name}"\n[schedule]\n${schedule}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
}

/** The text of the last user message the model was sent. */
function lastUserMessage(): string | undefined {
  const messages = (server.requests.at(-1)?.body['messages'] ?? []) as { role: string; content: unknown }[];
  const content = messages.findLast((message) => message.role === 'user')?.content;
  return typeof content === 'string' ? content : JSON.stringify(content);
}

async function spawn(current: Api, toml: string): Promise<void> {
  const response = await current.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: toml });
  expect(response.status).toBe(201);
}

describe("an agent's scheduled wake-ups over HTTP", () => {
  it("POST /api/agents/:agent/runs wakes a continuous agent now with its schedule's message; GET lists the run, and /metrics counts it", async () => {
    api = await startApi(dir.path);
    await spawn(api, agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 3600'));
    server.script([{ text: 'all quiet' }]);

    const forced = await api.request('/api/agents/monitor/runs', { method: 'POST' });

    expect(forced.status).toBe(200);
    const run = (await forced.json()) as Record<string, unknown>;
    expect(run).toMatchObject({ trigger: 'manual', outcome: 'completed', caught_up: false, count: 1, reason: null });
    expect(lastUserMessage()).toContain(CONTINUOUS_WAKE_MESSAGE);
    const listed = await api.request('/api/agents/monitor/runs?limit=5');
    expect(await listed.json()).toEqual([run]);
    const metrics = await (await api.request('/metrics')).text();
    expect(metrics).toContain('loom_schedule_runs_total{agent="monitor",outcome="completed"} 1');
  });

  it('refuses to force a wake-up of a reactive agent (409), and a limit out of range (400), saying what is wrong', async () => {
    api = await startApi(dir.path);
    await spawn(api, agentToml('chatty', 'mode = "reactive"'));

    const forced = await api.request('/api/agents/chatty/runs', { method: 'POST' });
    expect(forced.status).toBe(409);
    const { error } = (await forced.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('AGENT_NOT_SCHEDULED');
    expect(error.message).toContain('cannot wake agent "chatty" now: its [schedule] mode is "reactive"');
    const listed = await api.request('/api/agents/chatty/runs?limit=0');
    expect(listed.status).toBe(400);
    expect(server.requests).toHaveLength(0);
  });
});

describe('loom agent run and loom agent runs', () => {
  it('force a wake-up of a periodic agent in process and list it', async () => {
    const home = `${dir.path}/home`;
    await writeFile(`${dir.path}/reporter.toml`, agentToml('reporter', 'mode = "periodic"\ncron = "0 9 * * *"'));
    expect((await runCli(home, ['agent', 'spawn', `${dir.path}/reporter.toml`], { env: TEST_KEYS })).code).toBe(0);
    server.script([{ text: 'the report' }]);

    const woken = await runCli(home, ['agent', 'run', 'reporter'], { env: TEST_KEYS });
    expect(woken).toMatchObject({ code: 0, stdout: 'woke reporter: completed\n' });
    expect(lastUserMessage()).toContain('[scheduled] periodic wake-up (cron "0 9 * * *", UTC)');

    const listed = await runCli(home, ['agent', 'runs', 'reporter'], { env: TEST_KEYS });
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^DUE\s+TRIGGER\s+OUTCOME\s+STARTED\s+FINISHED\s+REASON$/);
    expect(listed.stdout.split('\n')[1]).toMatch(/^\S+Z\s+manual\s+completed\s+\S+Z\s+\S+Z\s+-$/);
    const bad = await runCli(home, ['agent', 'runs', 'reporter', '--limit', 'many'], { env: TEST_KEYS });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--limit: expected a whole number from 1 to 1000, got "many"');
  });
});
