import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { useDaemonHome } from '../support/daemon-process.ts';

// `loom start` keeps its log ring in the Loom home: what the event-log agent reads survives a restart.

const server = useScriptedModelServer();
const daemons = useDaemonHome('loom-log-ring-');

const post = (url: string, path: string, body: string, type: string): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

describe('the log ring of loom start', () => {
  it('holds the records of the daemon before its restart, the event-log agent reading them', async () => {
    const first = await daemons.start();
    const worker = `name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    expect((await post(first.url, '/api/agents', worker, 'application/toml')).status).toBe(201);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(await readFile(join(daemons.home, 'logs', 'log-ring.jsonl'), 'utf8')).toContain('spawned agent \\"worker\\"');

    const second = await daemons.start();
    const analyst = `name = "log-analyst"\nmodule = "builtin:eventlog"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["search_logs"]\n`;
    expect((await post(second.url, '/api/agents', analyst, 'application/toml')).status).toBe(201);
    server.script([
      { toolCalls: [{ name: 'search_logs', input: { query: 'spawned agent "worker"' } }] },
      { text: 'The worker was spawned before the restart.' },
    ]);
    expect((await post(second.url, '/api/agents/log-analyst/messages', JSON.stringify({ message: 'was a worker spawned?' }), 'application/json')).status).toBe(
      200,
    );
    const messages = server.requests.at(-1)?.body['messages'] as { role: string; content: string }[];
    expect(messages.find((message) => message.role === 'tool')?.content).toMatch(/^\S+Z INFO loom\.agents: spawned agent "worker"$/);
    second.child.kill('SIGTERM');
    await second.exited;
  });
});
