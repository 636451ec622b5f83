import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { runCli, runCliJson } from '../support/run-cli.ts';

interface AgentJson {
  id: string;
  name: string;
  state: 'running' | 'suspended';
  parent: string | null;
  children: string[];
  capabilities: { kind: string }[];
  manifest?: Record<string, unknown>;
}

const examples = join(import.meta.dirname, '../../examples/agents');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-');
  home = join(dir.path, 'home');
});

afterEach(async () => {
  await dir.remove();
});

async function write(name: string, text: string): Promise<string> {
  const path = join(dir.path, name);
  await writeFile(path, text);
  return path;
}

describe('loom init', () => {
  it('creates the home folder with a commented config, and never overwrites it', async () => {
    const first = await runCli(home, ['init']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(home);
    const config = await readFile(join(home, 'config.toml'), 'utf8');
    expect(config).toContain('# port = 4200');
    await writeFile(join(home, 'config.toml'), '[daemon]\nport = 4300\n');
    expect((await runCli(home, ['init'])).code).toBe(0);
    expect(await readFile(join(home, 'config.toml'), 'utf8')).toBe('[daemon]\nport = 4300\n');
  });

  it('refuses a config with an unknown key, naming file and key', async () => {
    await runCli(home, ['init']);
    await writeFile(join(home, 'config.toml'), '[daemon]\nprot = 1\n');
    const result = await runCli(home, ['agent', 'list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`cannot load config "${join(home, 'config.toml')}": [daemon].prot: unknown key, did you mean "port"?`);
  });
});

describe('loom manifest check', () => {
  it('prints the normalised researcher manifest and warns about the misplaced keys on stderr', async () => {
    const result = await runCli(home, ['manifest', 'check', join(examples, 'researcher.toml'), '--json']);
    expect(result.code).toBe(0);
    const normalised = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(normalised['priority']).toBe('normal');
    expect(normalised['tool_blocklist']).toEqual(['shell_exec', 'docker_exec']);
    expect(result.stderr.split('\n').filter((line) => line.startsWith('warning: '))).toHaveLength(8);
  });

  it('prints TOML without --json', async () => {
    const result = await runCli(home, ['manifest', 'check', join(examples, 'assistant.json')]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('name = "assistant"');
    expect(result.stdout).toContain('[capabilities]');
  });

  it('reads standard input when the file is "-"', async () => {
    const result = await runCli(home, ['manifest', 'check', '-', '--json'], { stdin: '{"name": "piped"}' });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ name: 'piped', module: 'builtin:assistant' });
  });
});

describe('loom agent', () => {
  it('spawns, lists, shows, suspends, resumes and kills, by name or id', async () => {
    const spawned = await runCliJson<AgentJson>(home, ['agent', 'spawn', join(examples, 'assistant.json')]);
    expect(spawned).toMatchObject({ name: 'assistant', state: 'running', parent: null, children: [] });
    expect(spawned.capabilities).toContainEqual({ kind: 'tool_invoke', pattern: 'file_read' });

    const listed = await runCliJson<AgentJson[]>(home, ['agent', 'list']);
    expect(listed.map((agent) => [agent.id, agent.state])).toEqual([[spawned.id, 'running']]);

    const shown = await runCliJson<AgentJson>(home, ['agent', 'show', spawned.id]);
    expect(shown.name).toBe('assistant');
    expect(shown.manifest?.['name']).toBe('assistant');

    expect((await runCliJson<AgentJson>(home, ['agent', 'suspend', 'assistant'])).state).toBe('suspended');
    expect((await runCliJson<AgentJson>(home, ['agent', 'show', 'assistant'])).state).toBe('suspended');
    expect((await runCliJson<AgentJson>(home, ['agent', 'resume', spawned.id])).state).toBe('running');

    const killed = await runCli(home, ['agent', 'kill', 'assistant']);
    expect(killed).toMatchObject({ code: 0, stdout: `killed assistant (${spawned.id})\n` });
    expect(await runCliJson<AgentJson[]>(home, ['agent', 'list'])).toEqual([]);
  });

  it('prints people-readable output without --json', async () => {
    const spawn = await runCli(home, ['agent', 'spawn', join(examples, 'researcher.toml')]);
    expect(spawn.code).toBe(0);
    expect(spawn.stdout).toMatch(/^spawned researcher \([0-9a-f-]{36}\)\n$/);
    const list = await runCli(home, ['agent', 'list']);
    expect(list.stdout.split('\n')[0]).toMatch(/^NAME\s+STATE\s+ID\s+PARENT\s+MODEL$/);
    expect(list.stdout).toContain('anthropic/claude-sonnet-4-20250514');
    const show = await runCli(home, ['agent', 'show', 'researcher']);
    expect(show.stdout).toContain('[capabilities].network "*.wikipedia.org"');
    // Running, but without ANTHROPIC_API_KEY it cannot answer: the state says so.
    expect(show.stdout).toContain('state:        cannot run: no key');
  });

  it("warns at spawn of the researcher's skills, none installed, and shows an agent's skills once one is", async () => {
    const spawn = await runCli(home, ['agent', 'spawn', join(examples, 'researcher.toml')]);
    expect(spawn.code).toBe(0);
    for (const name of ['web-search', 'pdf-reader', 'regex-expert']) {
      expect(spawn.stderr).toContain(
        `warning: skill "${name}" is not installed (looked for "${join(home, 'skills', '<org>', name)}" in every org); install it with its code (loom package install SKIL-…)`,
      );
    }
    const before = await runCli(home, ['agent', 'show', 'researcher']);
    expect(before.stdout).toContain('skills:       web-search, pdf-reader, regex-expert; none offered\n');
    expect(before.stdout).toContain('  warning: skill "pdf-reader" is not installed');

    await mkdir(join(home, 'skills', 'acme', 'pdf-reader', '1.2.0'), { recursive: true });
    await writeFile(
      join(home, 'skills', 'acme', 'pdf-reader', '1.2.0', 'SKILL.md'),
      '---\nname: pdf-reader\ndescription: Reads PDFs.\nmetadata:\n  version: "1.2.0"\n---\nOpen the PDF page by page.\n',
    );
    const after = await runCli(home, ['agent', 'show', 'researcher']);
    expect(after.stdout).toContain(
      'skills:       web-search, pdf-reader, regex-expert\n  @acme/skills/pdf-reader@1.2.0\n  warning: skill "web-search" is not installed',
    );
    expect(after.stdout).not.toContain('warning: skill "pdf-reader"');
  });

  it('names the default model an agent without [model] runs on, or says it has none', async () => {
    const manifest = await write('plain.toml', 'name = "plain"\n');
    expect((await runCli(home, ['agent', 'spawn', manifest])).code).toBe(0);
    expect((await runCli(home, ['agent', 'list'])).stdout).toMatch(
      /\n\s*plain\s+cannot run: no model\s+\S+\s+-\s+\(none: no \[model\], no \[default_model\]\)\n/,
    );
    expect((await runCliJson<AgentJson & { model: string | null; runs_on: string | null }>(home, ['agent', 'show', 'plain'])).runs_on).toBeNull();

    await writeFile(join(home, 'config.toml'), '[default_model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n');
    expect((await runCli(home, ['agent', 'list'])).stdout).toMatch(/\n\s*plain\s+cannot run: no key\s+\S+\s+-\s+openai\/gpt-4o-mini \(default\)\n/);
    expect((await runCli(home, ['agent', 'show', 'plain'])).stdout).toContain('model:        openai/gpt-4o-mini (default)\n');
    const shown = await runCliJson<AgentJson & { model: string | null; runs_on: string | null }>(home, ['agent', 'show', 'plain']);
    expect({ model: shown.model, runs_on: shown.runs_on }).toEqual({ model: null, runs_on: 'openai/gpt-4o-mini' });
  });

  it('shows when a scheduled agent runs, or what wakes it', async () => {
    expect((await runCli(home, ['agent', 'spawn', join(examples, 'morning-report.toml')])).code).toBe(0);
    expect((await runCli(home, ['agent', 'show', 'morning-report'])).stdout).toContain('schedule:     periodic, cron "0 9 * * 1-5"\n');
    const watcher = await write(
      'watcher.toml',
      'name = "watcher"\n[schedule]\nmode = "proactive"\n[[schedule.triggers]]\nevent = "file_created"\npattern = "/data/inbox/*.csv"\n[[schedule.triggers]]\nevent = "agent_spawned"\n',
    );
    expect((await runCli(home, ['agent', 'spawn', watcher])).code).toBe(0);
    expect((await runCli(home, ['agent', 'show', 'watcher'])).stdout).toContain(
      'schedule:     proactive, woken by file_created /data/inbox/*.csv; agent_spawned\n',
    );
  });

  it('spawns a child under a parent and refuses an escalating one', async () => {
    const parent = await runCliJson<AgentJson>(home, ['agent', 'spawn', join(examples, 'coordinator.toml')]);
    const child = await runCliJson<AgentJson>(home, ['agent', 'spawn', join(examples, 'helper.toml'), '--parent', 'coordinator']);
    expect(child.parent).toBe(parent.id);
    expect((await runCliJson<AgentJson>(home, ['agent', 'show', 'coordinator'])).children).toEqual([child.id]);

    const rogue = await runCli(home, ['agent', 'spawn', join(examples, 'rogue-helper.toml'), '--parent', parent.id]);
    expect(rogue.code).toBe(2);
    expect(rogue.stderr).toMatch(/^error: cannot spawn agent "rogue-helper" as a child of "coordinator": /);
    expect(rogue.stderr).toContain('[capabilities].shell "*"');
    expect(rogue.stderr).toContain('Other fields exceed the parent: workspace "/" lies outside the parent\'s workspace');
    expect(rogue.stderr).toContain('[model] calls model "openai-compatible/collector", which the parent may not call');
    expect(rogue.stdout).toBe('');
  });

  it('kills the children with their parent', async () => {
    await runCliJson(home, ['agent', 'spawn', join(examples, 'coordinator.toml')]);
    await runCliJson(home, ['agent', 'spawn', join(examples, 'helper.toml'), '--parent', 'coordinator']);
    const refused = await runCli(home, ['agent', 'kill', 'coordinator']);
    expect(refused).toMatchObject({
      code: 2,
      stderr: 'error: not killed: coordinator has 1 child, which would be killed with it; pass --yes to kill them all\n',
    });
    const killed = await runCliJson<AgentJson[]>(home, ['agent', 'kill', 'coordinator', '--yes']);
    expect(killed.map((agent) => agent.name)).toEqual(['coordinator', 'helper-wiki']);
    expect(await runCliJson<AgentJson[]>(home, ['agent', 'list'])).toEqual([]);
  });

  it('spawns from standard input', async () => {
    const result = await runCli(home, ['agent', 'spawn', '-', '--json'], { stdin: 'name = "piped"\n' });
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as AgentJson).name).toBe('piped');
  });

  it('keeps --json output pure JSON when the manifest has warnings', async () => {
    const result = await runCli(home, ['agent', 'spawn', join(examples, 'researcher.toml'), '--json']);
    expect(result.code).toBe(0);
    expect(() => JSON.parse(result.stdout) as unknown).not.toThrow();
    expect(result.stderr).toContain('warning: ');
  });
});

describe('bad input exits 2 with a message naming the problem and leaves the store unchanged', () => {
  const cases: { name: string; manifest?: string; args?: (path: string) => string[]; message: string | RegExp }[] = [
    { name: 'malformed TOML', manifest: 'name = "x"\n[capabilities\n', message: /TOML syntax error at line 2, column \d+/ },
    { name: 'an unknown key', manifest: 'name = "x"\ncolour = "blue"\n', message: 'colour: unknown key' },
    {
      name: 'a wrong type',
      manifest: 'name = "x"\n[capabilities]\nagent_spawn = "yes"\n',
      message: '[capabilities].agent_spawn: expected true or false, got "yes"',
    },
    {
      name: 'a bad enum',
      manifest: 'name = "x"\n[schedule]\nmode = "sometimes"\n',
      message: '[schedule].mode: expected one of reactive, continuous, periodic, proactive, got "sometimes"',
    },
    { name: 'an empty file', manifest: '', message: 'the manifest is empty' },
    { name: 'a missing file', args: () => ['agent', 'spawn', 'does-not-exist.toml'], message: 'cannot load manifest "does-not-exist.toml": no such file' },
    { name: 'a duplicate name', manifest: 'name = "existing"\n', message: 'cannot spawn agent "existing": an agent with that name already exists' },
    { name: 'an unknown agent', args: () => ['agent', 'suspend', 'ghost'], message: 'no agent named or with id "ghost"' },
    {
      name: 'an unknown parent',
      manifest: 'name = "y"\n',
      args: (path) => ['agent', 'spawn', path, '--parent', 'ghost'],
      message: 'no agent named or with id "ghost"',
    },
    {
      name: 'an escalating child',
      manifest: 'name = "greedy"\n[capabilities]\nnetwork = ["*"]\n',
      args: (path) => ['agent', 'spawn', path, '--parent', 'existing'],
      message: '[capabilities].network "*"',
    },
    { name: 'an unknown command', args: () => ['agent', 'explode'], message: /unknown command 'explode'/ },
    { name: 'a missing argument', args: () => ['agent', 'show'], message: /missing required argument 'agent'/ },
  ];

  for (const testCase of cases) {
    it(`refuses ${testCase.name}`, async () => {
      const existing = await write('existing.toml', 'name = "existing"\n[capabilities]\nnetwork = ["api.example.com"]\n');
      await runCliJson(home, ['agent', 'spawn', existing]);
      const before = await runCliJson<AgentJson[]>(home, ['agent', 'list']);
      const path = await write('bad.toml', testCase.manifest ?? '');
      const result = await runCli(home, testCase.args?.(path) ?? ['agent', 'spawn', path], { cwd: dir.path });
      expect(result.code).toBe(2);
      if (typeof testCase.message === 'string') expect(result.stderr).toContain(testCase.message);
      else expect(result.stderr).toMatch(testCase.message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout).toBe('');
      expect(await runCliJson<AgentJson[]>(home, ['agent', 'list'])).toEqual(before);
    });
  }
});

describe('loom --help', () => {
  const commands = [
    [],
    ['init'],
    ['manifest'],
    ['manifest', 'check'],
    ['agent'],
    ['agent', 'spawn'],
    ['agent', 'list'],
    ['agent', 'show'],
    ['agent', 'suspend'],
    ['agent', 'resume'],
    ['agent', 'kill'],
  ];
  for (const command of commands) {
    it(`explains "loom ${command.join(' ')}" with an example`, async () => {
      const result = await runCli(home, [...command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Usage: loom');
      expect(result.stdout).toMatch(/Example:\n {2}\$ loom /);
    });
  }
});
