import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UNKNOWN_OUTCOME_TEXT } from '../../src/runtime/index.ts';
import { freePort } from '../support/free-port.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { useDaemonHome } from '../support/daemon-process.ts';
import { runCli } from '../support/run-cli.ts';

const model = useScriptedModelServer();
const daemons = useDaemonHome('loom-chat-reconnect-');

/** A server the agent's tool calls reach on 127.0.0.1: `/hold` is never answered (a call under way when the daemon is killed). */
let world: { server: Server; url: string; hits: number; held: ServerResponse[] };

beforeEach(async () => {
  const held: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    world.hits += 1;
    request.resume();
    held.push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  world = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: 0, held };
});

afterEach(async () => {
  for (const response of world.held) response.destroy();
  await new Promise<void>((resolve) => world.server.close(() => resolve()));
});

describe('loom chat against a daemon killed (SIGKILL) mid-reply and started again', () => {
  it('says it is reconnecting, then shows the rest of the reply once, and the footer', async () => {
    const port = await freePort();
    const first = await daemons.start({ port });
    const manifest = `name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["http_request"]\nnetwork = ["${world.url.slice('http://'.length)}"]\n`;
    expect((await fetch(`${first.url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: manifest })).status).toBe(201);
    let answer!: () => void;
    model.script([
      { toolCalls: [{ name: 'http_request', input: { url: `${world.url}/hold`, method: 'POST', body: 'one order' } }] },
      { text: 'I will check whether the order went through.', gate: new Promise<void>((resolve) => (answer = resolve)) },
    ]);

    const chat = runCli(daemons.home, ['chat', 'clerk'], { stdin: 'place the order\n' });
    await waitFor('the tool call to reach the world', () => world.hits >= 1);
    first.child.kill('SIGKILL');
    await first.exited;

    // Started again on the same address: the chat finds it there.
    await daemons.start({ port });
    answer();
    const result = await chat;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('⟳ the connection to the daemon broke; reconnecting… (try 1 of 6)');
    expect(result.stdout.split('I will check whether the order went through.')).toHaveLength(2);
    // The call it saw start is shown once, then its outcome (unknown: the daemon stopped during it).
    expect(result.stdout.match(/http_request/g)?.length).toBe(2);
    expect(result.stdout).toContain(UNKNOWN_OUTCOME_TEXT.slice(0, 30));
    expect(result.stdout).toMatch(/I will check whether the order went through\.\n {2}\[\d+ in · \d+ out/);
    expect(world.hits).toBe(1);
  });
});
