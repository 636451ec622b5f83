import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';

const bin = join(import.meta.dirname, '../../bin/loom.js');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let children: ChildProcess[];

beforeEach(async () => {
  dir = await makeTempDir('loom-start-messages-');
  home = join(dir.path, 'home');
  children = [];
});

afterEach(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await dir.remove();
});

/**
 * Runs `loom start --foreground` (JSON lines on standard output) until it says it listens, then
 * stops it; or until it exits. Resolves with all it printed and its exit status.
 */
async function startAndStop(flags: string[], env: Record<string, string> = {}): Promise<{ output: string; code: number | null; listening?: string }> {
  const child = spawn(process.execPath, [bin, 'start', '--foreground', '--log-format', 'json', ...flags], {
    env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const listening = await new Promise<string | undefined>((resolve) => {
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      // Whole lines only (a chunk may end in the middle of one).
      const line = output
        .split('\n')
        .slice(0, -1)
        .find((text) => text.includes('Loom is listening at'));
      if (line !== undefined) resolve((JSON.parse(line) as { msg: string }).msg);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    void exited.then(() => resolve(undefined));
  });
  if (listening !== undefined) child.kill('SIGTERM');
  const code = await exited;
  return { output, code, ...(listening === undefined ? {} : { listening }) };
}

async function writeConfig(text: string): Promise<void> {
  await mkdir(home, { recursive: true });
  await writeFile(join(home, 'config.toml'), text);
}

describe('loom start --foreground', () => {
  it('says which port is in use, where, and what to do about it, with exit status 2', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const address = taken.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    try {
      const result = await startAndStop(['--port', String(address.port)]);
      expect(result.code).toBe(2);
      expect(result.output).toContain(
        `error: port ${address.port} on 127.0.0.1 is in use (another Loom, or another program); stop it, or pass --port or set [daemon].port in ${join(home, 'config.toml')}\n`,
      );
      expect(result.output).not.toContain('EADDRINUSE');
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it('names the default model of config.toml, and says nothing of missing keys when it needs none', async () => {
    await writeConfig('[default_model]\nprovider = "openai-compatible"\nmodel = "scripted"\nbase_url = "http://127.0.0.1:4300/v1"\n');
    const result = await startAndStop(['--port', '0']);
    expect(result.code).toBe(0);
    expect(result.listening).toMatch(
      /^Loom is listening at http:\/\/127\.0\.0\.1:\d+\. Default model: openai-compatible\/scripted \(\[default_model\] in config\.toml\)\.( Note: |$)/,
    );
    expect(result.output).not.toContain('No model key found');
  });

  it('says why the default model cannot run when the key it needs is not set', async () => {
    await writeConfig('[default_model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\n');
    const result = await startAndStop(['--port', '0']);
    expect(result.listening).toContain(
      'Agents without [model] cannot run: model "anthropic/claude-haiku-4-5" ([default_model] (config.toml)) needs ANTHROPIC_API_KEY, which is not set; set ANTHROPIC_API_KEY in the daemon\'s environment and restart it',
    );
  });

  it('suggests loom init when there is neither a model key nor a default model', async () => {
    const result = await startAndStop(['--port', '0']);
    expect(result.listening).toContain(
      'No model key found: looked for ANTHROPIC_API_KEY, OPENAI_API_KEY, GROQ_API_KEY, OPENROUTER_API_KEY, and Ollama at http://127.0.0.1:11434/v1',
    );
    expect(result.listening).toContain(
      'No default model either: run `loom init` to set one up (or to try Loom with a scripted model), then restart the daemon.',
    );
  });

  it('says there is no default model, and that loom init picks one, when a key is set but no default model', async () => {
    const result = await startAndStop(['--port', '0'], { OPENAI_API_KEY: 'sk-test' });
    expect(result.listening).toMatch(
      /^Loom is listening at http:\/\/127\.0\.0\.1:\d+\. No default model: agents without \[model\] cannot run; `loom init` picks one from your keys, then restart the daemon\.( Note: |$)/,
    );
  });
});
