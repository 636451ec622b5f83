import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toAgentView } from '../../src/kernel/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { runCli, runCliJson } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

interface AgentJson {
  name: string;
  state: string;
  cannot_run: { kind: string; model: string | null; reason: string; fix: string } | null;
}

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cannot-run-');
  home = join(dir.path, 'home');
});

afterEach(async () => {
  await dir.remove();
});

async function spawn(name: string, text: string): Promise<void> {
  const path = join(dir.path, `${name}.toml`);
  await writeFile(path, text);
  expect((await runCli(home, ['agent', 'spawn', path])).code).toBe(0);
}

describe('an agent that cannot run, in loom agent list', () => {
  it('says "cannot run: no model" for an agent with no model, with why and the fix under the table, and cannot_run in --json', async () => {
    await spawn('plain', 'name = "plain"\n');
    await spawn('local', 'name = "local"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n');

    const list = await runCli(home, ['agent', 'list']);
    expect(list.stdout).toMatch(/\n\s*plain\s+cannot run: no model\s/);
    expect(list.stdout).toMatch(/\n\s*local\s+running\s/);
    expect(list.stdout).toContain('\nplain cannot run: it has no [model] and config.toml has no [default_model]; run `loom init`');

    const agents = await runCliJson<AgentJson[]>(home, ['agent', 'list']);
    const plain = agents.find((agent) => agent.name === 'plain');
    expect(plain?.state).toBe('running');
    expect(plain?.cannot_run).toMatchObject({
      kind: 'no-model',
      model: null,
      reason: expect.stringContaining('no [default_model]') as unknown,
      fix: expect.stringContaining('loom init') as unknown,
    });
    expect(agents.find((agent) => agent.name === 'local')?.cannot_run).toBeNull();
    expect((await runCli(home, ['agent', 'show', 'plain'])).stdout).toContain('state:        cannot run: no model\n');
  });

  it('runs once config.toml has a [default_model] it can call, and a suspended agent is just suspended', async () => {
    await spawn('plain', 'name = "plain"\n');
    await writeFile(join(home, 'config.toml'), '[default_model]\nprovider = "ollama"\nmodel = "llama3.2"\n');
    expect((await runCli(home, ['agent', 'list'])).stdout).toMatch(/\n\s*plain\s+running\s/);
    await writeFile(join(home, 'config.toml'), '');
    expect((await runCli(home, ['agent', 'suspend', 'plain'])).code).toBe(0);
    const list = await runCli(home, ['agent', 'list']);
    expect(list.stdout).toMatch(/\n\s*plain\s+suspended\s/);
    expect(list.stdout).not.toContain('cannot run');
  });
});

describe('toAgentView()', () => {
  const entry = (toml: string) => ({
    id: 'a1',
    name: 'writer',
    state: 'running' as const,
    parentId: null,
    ancestors: [],
    children: new Set<string>(),
    sessionId: 's1',
    manifest: parseManifest(toml, { source: 'writer.toml' }).manifest,
    capabilities: [],
    createdAt: 0,
    updatedAt: 0,
  });

  it("says an agent whose model's key is not set in the daemon's environment cannot run, naming the variable", () => {
    const view = toAgentView(entry('name = "writer"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n'), undefined, {});
    expect(view.cannot_run).toEqual({
      kind: 'missing-key',
      model: 'anthropic/claude-sonnet-4-5',
      reason: 'model "anthropic/claude-sonnet-4-5" ([model]) needs ANTHROPIC_API_KEY, which is not set',
      fix: "set ANTHROPIC_API_KEY in the daemon's environment and restart it, or name the variable that holds the key in [model].api_key_env",
    });
    expect(
      toAgentView(entry('name = "writer"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n'), undefined, { ANTHROPIC_API_KEY: 'sk-ant' })
        .cannot_run,
    ).toBeNull();
  });

  it('looks at the default model for an agent without [model], and not at fallback models', () => {
    const plain = entry('name = "writer"\n[[fallback_models]]\nprovider = "openai"\nmodel = "gpt-4o"\n');
    expect(toAgentView(plain, { provider: 'openai', model: 'gpt-4o-mini' }, {}).cannot_run?.kind).toBe('missing-key');
    expect(toAgentView(plain, { provider: 'openai', model: 'gpt-4o-mini' }, { OPENAI_API_KEY: 'sk' }).cannot_run).toBeNull();
    expect(toAgentView(plain, { provider: 'ollama', model: 'llama3.2' }, {}).cannot_run).toBeNull();
  });
});
