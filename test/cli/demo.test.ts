import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliJson } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';

const root = join(import.meta.dirname, '../..');
/** The scripted model's pace in these tests: small, so the tests are quick, and still word by word. */
const PACE_MS = 5;

/** Reads a stream of agent events (SSE) to its end: each event with when it came (ms since the request). */
async function streamTurn(url: string, agent: string, message: string): Promise<{ type: string; text?: string; at: number }[]> {
  const started = performance.now();
  const response = await fetch(`${url}/api/agents/${agent}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ message }),
  });
  expect(response.status).toBe(200);
  const events: { type: string; text?: string; at: number }[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const data = buffer
        .slice(0, end)
        .split('\n')
        .find((line) => line.startsWith('data: '));
      buffer = buffer.slice(end + 2);
      if (data !== undefined) events.push({ ...(JSON.parse(data.slice(6)) as { type: string; text?: string }), at: performance.now() - started });
    }
  }
  return events;
}

/**
 * `loom demo`, as a newcomer without a key runs it: one command starts the daemon on a scripted
 * model and spawns the example agents, each on its own script (examples/models/<agent>.json);
 * each does what the demo says it does, and replies stream word by word.
 */
describe('loom demo', () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let demo: ChildProcess | undefined;
  let url: string;
  let output = '';
  let home: string;

  beforeAll(async () => {
    dir = await makeTempDir('loom-demo-');
    home = join(dir.path, 'home');
    demo = spawn(process.execPath, [join(root, 'bin/loom.js'), 'demo', '--port', '0', '--pace', String(PACE_MS)], {
      env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: dir.path,
    });
    demo.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    demo.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    url = await waitFor(
      `loom demo to say where it runs (${output})`,
      () => (output.includes('Press Ctrl-C') ? /the daemon is at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1] : undefined),
      { ms: 60_000 },
    );
  }, 90_000);
  afterAll(async () => {
    if (demo !== undefined && demo.exitCode === null) {
      const exited = new Promise((resolve) => demo?.once('exit', resolve));
      demo.kill('SIGINT');
      await exited;
    }
    await dir.remove();
  });

  it('says the model is scripted, where the dashboard is, what to try, and how to switch to a key or Ollama', () => {
    expect(output).toContain('The model is scripted: no key, no network.');
    expect(output).toContain(`Open the dashboard: ${url}/#/agents/hello/chat`);
    expect(output).toContain(`npx loom --url ${url} chat hello`);
    expect(output).toContain('ANTHROPIC_API_KEY');
    expect(output).toContain('start Ollama');
    // Its own home: the person's LOOM_HOME holds no agent of the demo.
    expect(output).toContain(`(home ${join(home, 'demo')})`);
  });

  it('streams a reply word by word at the scripted pace, and the CLI shows it', async () => {
    const events = await streamTurn(url, 'hello', 'Who is here?');
    const deltas = events.filter((event) => event.type === 'text-delta');
    expect(events.some((event) => event.type === 'tool-call')).toBe(true);
    expect(deltas.map((event) => event.text).join('')).toContain('Hello! I am answering from a scripted model');
    expect(deltas.length).toBeGreaterThan(30);
    // The words come over time, not in one piece: at least 20 paces from the first to the last.
    expect((deltas.at(-1)?.at ?? 0) - (deltas[0]?.at ?? 0)).toBeGreaterThanOrEqual(20 * PACE_MS);

    const sent = await runCli(home, ['--url', url, 'send', 'hello', 'Who is here?', '--stream']);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toContain('→ agent_list');
    expect(sent.stdout).toContain('Hello! I am answering from a scripted model');
  });

  it('spawns the example agents, each running on its own script and none that cannot run', async () => {
    const agents = await runCliJson<{ name: string; state: string; runs_on: string; cannot_run: unknown }[]>(home, ['--url', url, 'agent', 'list']);
    expect(agents.map((agent) => [agent.name, agent.state, agent.runs_on, agent.cannot_run]).sort()).toEqual(
      ['assistant', 'careful-writer', 'deep-thinker', 'hello', 'log-analyst', 'morning-report'].map((name) => [
        name,
        'running',
        `openai-compatible/${name}`,
        null,
      ]),
    );
  });

  it('shows each example doing what the demo says: a memory note, the log read, a plan, the workspace listed', async () => {
    const send = async (agent: string, message: string): Promise<string> => {
      const result = await runCli(home, ['--url', url, 'send', agent, message, '--stream']);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    expect(await send('assistant', 'Remember that I said hello')).toMatch(
      /→ memory_store .*self\.last_note[\s\S]*← memory_store: stored self\.last_note[\s\S]*Noted\./,
    );
    expect(await send('log-analyst', 'Any errors lately?')).toMatch(/→ get_recent_logs[\s\S]*get_recent_logs/);
    expect(await send('deep-thinker', 'Why do leaves turn red?')).toContain('I assessed the question, planned two steps');
    expect(await send('morning-report', 'Report now')).toMatch(/→ file_list[\s\S]*Here is the morning report/);
  });

  it('has careful-writer ask for an approval before it writes haiku.txt, and write it once approved', async () => {
    const sending = runCli(home, ['--url', url, 'send', 'careful-writer', 'Write a haiku to haiku.txt', '--stream']);
    const pending = await waitFor('the approval request of careful-writer', async () => {
      const approvals = await runCliJson<{ id: string; agent: string; tool: string }[]>(home, ['--url', url, 'approvals', 'list']);
      return approvals.find((approval) => approval.tool === 'file_write');
    });
    expect((await runCli(home, ['--url', url, 'approvals', 'approve', pending.id])).code).toBe(0);
    const sent = await sending;
    expect(sent.code).toBe(0);
    expect(sent.stdout).toContain('waits for approval');
    expect(sent.stdout).toContain('Done: haiku.txt is in my workspace');
    const workspace = join(home, 'demo', 'workspaces', 'careful-writer');
    expect(await readFile(join(workspace, 'haiku.txt'), 'utf8')).toContain('Loom threads the agents');
  });

  it('refuses a second demo on the same home, naming the one that runs and its dashboard', async () => {
    const second = await runCli(home, ['demo', '--port', '0']);
    expect(second.code).toBe(2);
    expect(second.stderr).toBe(
      `error: cannot start the demo: another demo runs at ${url} (pid ${String(demo?.pid)}); use that one (its dashboard: ${url}/#/agents/hello/chat), or stop it with Ctrl-C in its terminal\n`,
    );
  });
});
