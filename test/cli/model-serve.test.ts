import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const bin = join(import.meta.dirname, '../../bin/loom.js');
const script = join(import.meta.dirname, '../../examples/models/hello.json');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let child: ChildProcess | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-model-serve-');
});
afterEach(async () => {
  if (child !== undefined && child.exitCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  }
  child = undefined;
  await dir.remove();
});

/** Starts `loom model serve` as a process and resolves with the URL it prints. */
async function serve(args: string[]): Promise<string> {
  child = spawn(process.execPath, [bin, 'model', 'serve', ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: join(dir.path, 'home') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${output}`)), 15_000);
    child?.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /Scripted model at (\S+) /.exec(output)?.[1];
      if (url !== undefined) {
        clearTimeout(timer);
        resolve(url);
      }
    });
    child?.on('exit', (code) => reject(new Error(`exited ${String(code)}: ${output}`)));
  });
}

describe('loom model serve', () => {
  it('answers the official OpenAI client with the script, a tool call first, and starts over when looping', async () => {
    const url = await serve(['--script', script, '--port', '0']);
    const client = new OpenAI({ baseURL: url, apiKey: 'none' });
    const first = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'hi' }] });
    expect(first.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'agent_list' } });
    const second = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of second) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toMatch(/^Hello! I am answering from a scripted model/);
    const third = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'again' }] });
    expect(third.choices[0]?.message.tool_calls?.[0]?.type).toBe('function');
    // The Anthropic Messages API too.
    const anthropic = await fetch(`${url}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'scripted', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(((await anthropic.json()) as { content: { type: string; text?: string }[] }).content[0]?.text).toMatch(/^Hello!/);
  });

  it('refuses a script that is not one, naming the file and the path', async () => {
    const bad = join(dir.path, 'bad.json');
    await writeFile(bad, JSON.stringify({ loop: true, steps: [{ txt: 'typo' }] }));
    const result = await runCli(join(dir.path, 'home'), ['model', 'serve', '--script', bad]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`model script "${bad}": `);
    expect(result.stderr).toContain('steps[0]');
  });
});

describe('loom init and the first reply', () => {
  it('sets the default model from a key it finds, and leaves an existing one alone', async () => {
    const home = join(dir.path, 'home');
    const first = await runCli(home, ['init'], { env: { ANTHROPIC_API_KEY: 'sk-ant-test' } });
    expect(first.stdout).toContain('Default model: anthropic/claude-haiku-4-5 (found ANTHROPIC_API_KEY)');
    const again = await runCli(home, ['init'], { env: { OPENAI_API_KEY: 'sk-test' } });
    expect(again.stdout).toContain(`config:   ${join(home, 'config.toml')} (already there)\n`);
    expect(again.stdout).toContain('Default model: anthropic/claude-haiku-4-5\n');
  });

  it('with no key: the scripted model as the default gives the hello agent a reply with a tool call, as the quick start says', async () => {
    const url = await serve(['--script', script, '--port', '0']);
    const home = join(dir.path, 'home');
    const init = await runCli(home, ['init', '--default-model', 'openai-compatible/scripted', '--base-url', url]);
    expect(init.stdout).toContain('Default model: openai-compatible/scripted (as asked)');
    expect((await runCli(home, ['agent', 'spawn', join(import.meta.dirname, '../../examples/agents/hello.toml')])).code).toBe(0);
    const reply = await runCli(home, ['send', 'hello', 'Who is here?', '--stream']);
    expect(reply.code).toBe(0);
    expect(reply.stdout).toContain('agent_list');
    expect(reply.stdout).toContain('Hello! I am answering from a scripted model');

    // `send <agent> -` reads the message from standard input; `agent reset` empties the session.
    const piped = await runCli(home, ['send', 'hello', '-', '--json'], { stdin: 'Who is here now?\n' });
    expect(JSON.parse(piped.stdout)).toMatchObject({ text: expect.stringContaining('Hello!') as string });
    const store = openSqliteStore({ path: join(home, 'data', 'loom.db') });
    const sessionOf = async (): Promise<string> => {
      const agent = (await store.agents.list()).find((record) => record.name === 'hello');
      return JSON.stringify((await store.sessions.get(agent?.sessionId ?? ''))?.messages ?? []);
    };
    try {
      expect(await sessionOf()).toContain('Who is here now?');
      expect((await runCli(home, ['agent', 'reset', 'hello'])).stdout).toBe('Reset the session of hello.\n');
      expect(await sessionOf()).toBe('[]');
    } finally {
      await store.close();
    }
    expect((await runCli(home, ['send', 'hello', '-'], { stdin: '  \n' })).stderr).toBe('error: standard input was empty: there is no message to send\n');
    // No daemon runs here: status says so and exits 1.
    expect(await runCli(home, ['status'])).toMatchObject({ code: 1 });
  });
});

describe('the scripted replies for the orchestrating examples', () => {
  const examples = join(import.meta.dirname, '../../examples');
  const onScript = async (name: string): Promise<string> => {
    const url = await serve(['--script', join(examples, 'models', `${name}.json`), '--port', '0']);
    const home = join(dir.path, 'home');
    expect((await runCli(home, ['init', '--default-model', 'openai-compatible/scripted', '--base-url', url])).code).toBe(0);
    return home;
  };

  it('front-desk.json: the front desk picks the assistant, hands it the request and answers from its reply', async () => {
    const home = await onScript('front-desk');
    for (const agent of ['agents/assistant.json', 'agents/front-desk.toml'])
      expect((await runCli(home, ['agent', 'spawn', join(examples, agent)])).code).toBe(0);
    const reply = await runCli(home, ['send', 'front-desk', 'What is in your workspace?', '--stream']);
    expect(reply.code).toBe(0);
    expect(reply.stdout).toContain('· left out: researcher');
    expect(reply.stdout).toContain('· Delegating to assistant…');
    expect(reply.stdout).toContain('→ agent_message {"target_agent_name":"assistant"');
    expect(reply.stdout).toContain('I asked the assistant, which handles files and notes.');
  });

  it('deep-thinker.json: the chain of thought plans two steps, runs them and answers', async () => {
    const home = await onScript('deep-thinker');
    expect((await runCli(home, ['agent', 'spawn', join(examples, 'agents/deep-thinker.toml')])).code).toBe(0);
    const reply = await runCli(home, ['send', 'deep-thinker', 'Why do leaves turn red?', '--stream']);
    expect(reply.code).toBe(0);
    expect(reply.stdout).toContain('· Step s1: Lay out the facts the question rests on.\n  · Step s2: Weigh them and draw the conclusion.\n');
    expect(reply.stdout).toContain('I assessed the question, planned two steps, ran them in order');
  });
});
