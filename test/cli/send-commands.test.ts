import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-send-');
  home = join(dir.path, 'home');
  const manifest = join(dir.path, 'helper.toml');
  await writeFile(
    manifest,
    `name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["file_write"]\n`,
  );
  expect((await runCli(home, ['agent', 'spawn', manifest])).code).toBe(0);
});
afterEach(async () => {
  await dir.remove();
});

const loom = (args: string[], stdin?: string) => runCli(home, args, { env: TEST_KEYS, ...(stdin === undefined ? {} : { stdin }) });

describe('loom send', () => {
  it('prints the reply', async () => {
    server.script([{ text: 'Oslo.' }]);
    expect(await loom(['send', 'helper', 'Capital of Norway?'])).toMatchObject({ code: 0, stdout: 'Oslo.\n' });
  });

  it('prints the turn as JSON with --json', async () => {
    server.script([{ text: 'Oslo.', usage: { inputTokens: 1000, outputTokens: 100 } }]);
    const result = await loom(['send', 'helper', 'Capital of Norway?', '--json']);
    expect(result.code).toBe(0);
    const turn = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(turn).toMatchObject({ text: 'Oslo.', usage: { input_tokens: 1000, output_tokens: 100 }, iterations: 1, model: 'openai/gpt-4o' });
    expect(turn['cost_usd']).toBeGreaterThan(0);
  });

  it('streams text and shows each tool call and result on its own line with --stream', async () => {
    server.script([{ toolCalls: [{ name: 'file_write', input: { path: 'a.txt', content: 'x' } }] }, { text: 'Wrote it.' }]);
    const result = await loom(['send', 'helper', 'write a.txt', '--stream']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/→ file_write \{"path":"a\.txt","content":"x"\}\n/);
    expect(result.stdout).toMatch(/← file_write: wrote 1 byte/);
    expect(result.stdout).toContain('Wrote it.\n');
    expect(result.stderr).toMatch(/\[\d+ in · \d+ out · \$[\d.]+ · 2 iterations · openai\/gpt-4o\]/);
  });

  it('streams a reply cut at its length limit and continued as one text, with no line between its parts', async () => {
    server.script([{ text: 'The quick bro', finishReason: 'length' }, { text: 'wn fox.' }]);
    const streamed = await loom(['send', 'helper', 'a sentence please', '--stream']);
    expect(streamed.code).toBe(0);
    expect(streamed.stdout).toBe('The quick brown fox.\n');
  });

  it('shows the steps of an agent that streams no text, and its answer at the end, with --stream and in a chat', async () => {
    const thinker = join(dir.path, 'thinker.toml');
    await writeFile(
      thinker,
      `name = "thinker"\nmodule = "builtin:chain-of-thought"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`,
    );
    expect((await loom(['agent', 'spawn', thinker])).code).toBe(0);
    const fastPath = () => server.script([{ text: JSON.stringify({ complexity: 'trivial', confidence: 0.9, needs_planning: false }) }, { text: 'Paris.' }]);
    fastPath();
    const streamed = await loom(['send', 'thinker', 'Capital of France?', '--stream']);
    expect(streamed.code).toBe(0);
    expect(streamed.stdout).toBe('  · Assessing the question…\n  · Answering directly (confidence 0.90 ≥ 0.75)…\nParis.\n');
    fastPath();
    const chat = await loom(['chat', 'thinker'], 'Capital of France?\n/exit\n');
    expect(chat.stdout).toMatch(/ {2}· Answering directly \(confidence 0\.90 ≥ 0\.75\)…\nParis\.\n {2}\[/);
  });

  it('exits 2 naming the agent when it does not exist, and 1 with the models tried when every model fails', async () => {
    expect(await loom(['send', 'nobody', 'hi'])).toMatchObject({ code: 2, stderr: 'error: no agent named or with id "nobody"\n' });
    server.script([{ status: 401 }]);
    const failed = await loom(['send', 'helper', 'hi']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('openai/gpt-4o');
  });

  it('exits 2 with the key variable named when the key is missing', async () => {
    const result = await runCli(home, ['send', 'helper', 'hi'], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('set OPENAI_API_KEY');
  });
});

describe('loom chat', () => {
  it('answers each line, streams the reply and prints usage after it', async () => {
    server.script([{ text: 'Hello!' }, { text: 'Goodbye!' }]);
    const result = await loom(['chat', 'helper'], 'hi\nbye\n/exit\nignored\n');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Chatting with helper.');
    expect(result.stdout).toMatch(/helper> Hello!\n {2}\[.* · 1 iteration · openai\/gpt-4o\]\n/);
    expect(result.stdout).toMatch(/helper> Goodbye!\n/);
    expect(server.requests).toHaveLength(2);
  });

  it('takes /help, /usage and /reset between messages, and refuses an unknown command', async () => {
    server.script([{ text: 'Noted.', usage: { inputTokens: 40, outputTokens: 4 } }]);
    const result = await loom(['chat', 'helper'], 'remember blue\n/usage\n/reset\n/help\n/frobnicate\n/exit\n');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/helper\s+openai\/gpt-4o\s+1\s+40\s+4\s+\$/);
    expect(result.stdout).toContain('The session of helper is empty now.');
    expect(result.stdout).toContain('Commands: /help this list, /reset empty the session, /usage tokens and cost so far, /exit leave (or Ctrl-D).');
    expect(result.stderr).toContain('unknown command /frobnicate;');
    expect(server.requests).toHaveLength(1);
    expect(JSON.parse((await loom(['agent', 'show', 'helper', '--json'])).stdout)).toMatchObject({ name: 'helper' });
  });

  it('reports a failed turn and goes on', async () => {
    server.script([{ status: 400 }, { text: 'Recovered.' }]);
    const result = await loom(['chat', 'helper'], 'first\nsecond\n');
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('error: ');
    expect(result.stdout).toContain('Recovered.');
  });
});

describe('loom usage', () => {
  it('shows tokens and cost by agent and model, as a table and as JSON', async () => {
    server.script([
      { text: 'a', usage: { inputTokens: 100, outputTokens: 10 } },
      { text: 'b', usage: { inputTokens: 200, outputTokens: 20 } },
    ]);
    await loom(['send', 'helper', 'one']);
    await loom(['send', 'helper', 'two']);
    const rows = JSON.parse((await loom(['usage', '--json'])).stdout) as Record<string, unknown>[];
    expect(rows).toMatchObject([{ agent: 'helper', model: 'openai/gpt-4o', calls: 2, input_tokens: 300, output_tokens: 30 }]);
    const table = (await loom(['usage', '--agent', 'helper'])).stdout;
    expect(table).toMatch(/^AGENT\s+MODEL\s+CALLS\s+INPUT\s+OUTPUT\s+COST\n/);
    expect(table).toMatch(/helper\s+openai\/gpt-4o\s+2\s+300\s+30\s+\$/);
  });
});
