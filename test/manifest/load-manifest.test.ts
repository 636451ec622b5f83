import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManifestError } from '../../src/errors/index.ts';
import { loadManifestFile, namedModel, parseManifest, withoutRetiredKeys } from '../../src/manifest/index.ts';

const examples = join(import.meta.dirname, '../../examples/agents');

function refusal(text: string, source = 'a.toml'): string {
  try {
    parseManifest(text, { source });
  } catch (error) {
    expect(error).toBeInstanceOf(ManifestError);
    return (error as ManifestError).message;
  }
  throw new Error('expected the manifest to be refused');
}

describe('the spec researcher example', () => {
  it('loads unchanged, with the keys TOML put in tables read where the author meant them', async () => {
    const { manifest } = await loadManifestFile(join(examples, 'researcher.toml'));
    expect(manifest.name).toBe('researcher');
    expect(manifest.priority).toBe('normal');
    expect(manifest.skills).toEqual(['web-search', 'pdf-reader', 'regex-expert']);
    expect(manifest.mcp_servers).toEqual([]);
    expect(manifest.tags).toEqual(['research', 'analysis', 'fact-checking']);
    expect(manifest.workspace).toBe('~/.openfang/workspaces/researcher');
    expect(manifest.generate_identity_files).toBe(true);
    expect(manifest.tool_allowlist).toEqual([]);
    expect(manifest.tool_blocklist).toEqual(['shell_exec', 'docker_exec']);
    // The tables keep only their own keys.
    expect(manifest.tools['web_fetch']).toEqual({ timeout_seconds: 30, max_content_bytes: 500000 });
    expect(manifest.autonomous).toEqual({
      approval_required_for: ['file_write', 'shell_exec', 'agent_spawn'],
      max_actions_per_cycle: 100,
      idle_timeout_seconds: 3600,
    });
    expect(manifest.exec_policy).toEqual({ allow_shell: false, allow_network: true, allow_file_write: false });
    expect(manifest.resources).toEqual({
      max_tokens_per_hour: 1_000_000,
      max_cost_per_hour: 10,
      max_iterations: 50,
      max_tokens_per_day: 0,
      max_cost_per_day: 0,
    });
  });

  it('warns once per misplaced key, naming the table TOML put it in and the fix', async () => {
    const { warnings } = await loadManifestFile(join(examples, 'researcher.toml'));
    const misplaced = [
      ['priority', '[resources]'],
      ['skills', '[tools.web_fetch]'],
      ['mcp_servers', '[tools.web_fetch]'],
      ['tags', '[tools.web_fetch]'],
      ['workspace', '[autonomous]'],
      ['generate_identity_files', '[autonomous]'],
      ['tool_allowlist', '[exec_policy]'],
      ['tool_blocklist', '[exec_policy]'],
    ];
    expect(warnings).toHaveLength(misplaced.length);
    misplaced.forEach(([key, table], index) => {
      expect(warnings[index]).toContain(`"${key}" stands after the ${table} header`);
      expect(warnings[index]).toContain(`${table}.${key}`);
      expect(warnings[index]).toContain('move it above the first table header (line 9)');
    });
    expect(warnings[0]).toMatch(/^manifest ".*researcher\.toml" \(line 38\):/);
  });

  it('loads without warnings once the top-level keys stand above the first table', () => {
    const { manifest, warnings } = parseManifest('name = "r"\npriority = "high"\ntags = ["a"]\n[resources]\nmax_iterations = 5\n', { source: 'r.toml' });
    expect(warnings).toEqual([]);
    expect(manifest.priority).toBe('high');
    expect(manifest.resources.max_iterations).toBe(5);
  });
});

describe('parseManifest()', () => {
  it('fills every default of spec/01 for a manifest with only a name', () => {
    const { manifest } = parseManifest('name = "minimal"', { source: 'minimal.toml' });
    expect(manifest).toMatchObject({
      name: 'minimal',
      version: '0.1.0',
      description: '',
      author: '',
      module: 'builtin:assistant',
      schedule: { mode: 'reactive', triggers: [] },
      fallback_models: [],
      priority: 'normal',
      tools: {},
      skills: [],
      mcp_servers: [],
      metadata: {},
      tags: [],
      tool_allowlist: [],
      tool_blocklist: [],
      generate_identity_files: false,
    });
    expect(manifest.capabilities.tools).toEqual([]);
    expect(manifest.capabilities.agent_spawn).toBe(false);
    for (const optional of ['model', 'profile', 'routing', 'autonomous', 'workspace', 'exec_policy'] as const) {
      expect(manifest[optional]).toBeUndefined();
    }
  });

  it('reads JSON by content and TOML otherwise', () => {
    expect(parseManifest('{ "name": "from-json" }', { source: '<stdin>' }).manifest.name).toBe('from-json');
    expect(parseManifest('name = "from-toml"', { source: '<stdin>' }).manifest.name).toBe('from-toml');
  });

  it('gives a continuous agent the default interval', () => {
    const { manifest } = parseManifest('[schedule]\nmode = "continuous"', { source: 'c.toml' });
    expect(manifest.schedule.interval_seconds).toBe(60);
  });

  it('refuses catch_up on an agent with no timed schedule, naming the key and the mode', () => {
    expect(() => parseManifest('[schedule]\nmode = "reactive"\ncatch_up = "all"', { source: 'r.toml' })).toThrow(
      /\[schedule\]\.catch_up: only used when mode = "continuous" or "periodic", but mode is "reactive"/,
    );
    expect(() => parseManifest('[schedule]\nmode = "periodic"\ncron = "0 9 * * *"\ncatch_up = "twice"', { source: 'p.toml' })).toThrow(
      /\[schedule\]\.catch_up: expected one of once, all, skip, got "twice"/,
    );
    expect(
      parseManifest('[schedule]\nmode = "continuous"\ncatch_up = "skip"\ncatch_up_window_seconds = 600', { source: 'c.toml' }).manifest.schedule,
    ).toMatchObject({ catch_up: 'skip', catch_up_window_seconds: 600 });
  });

  it('accepts every field of the manifest table', () => {
    const { manifest, warnings } = parseManifest(
      `name = "full"
version = "1.2.3"
description = "d"
author = "me"
module = "builtin:chat"
priority = "critical"
profile = "full"
skills = ["s"]
mcp_servers = ["github"]
tags = ["t"]
workspace = "/tmp/w"
generate_identity_files = true
tool_allowlist = ["file_read"]
tool_blocklist = ["shell_exec"]

[schedule]
mode = "proactive"
[[schedule.triggers]]
event = "file_created"
pattern = "/data/inbox/*.json"

[model]
provider = "openai-compatible"
model = "qwen"
base_url = "http://127.0.0.1:8000/v1"

[[fallback_models]]
provider = "ollama"
model = "llama3.2"

[resources]
max_tokens_per_hour = 10
max_cost_per_hour = 1.5
max_iterations = 3

[capabilities]
tools = ["*"]
llm_max_tokens = 1000
econ_spend = 2.5

[tools.file_read]
timeout_seconds = 5
custom = { deep = [1, 2] }

[metadata]
owner = { team = "research" }

[routing]
enabled = false

[autonomous]
max_actions_per_cycle = 7

[exec_policy]
allow_shell = false
`,
      { source: 'full.toml' },
    );
    expect(warnings).toEqual([]);
    expect(manifest.schedule.triggers).toEqual([{ event: 'file_created', pattern: '/data/inbox/*.json' }]);
    expect(manifest.model?.base_url).toBe('http://127.0.0.1:8000/v1');
    expect(manifest.tools['file_read']).toEqual({ timeout_seconds: 5, custom: { deep: [1, 2] } });
    expect(manifest.metadata).toEqual({ owner: { team: 'research' } });
    expect(manifest.routing).toEqual({ enabled: false, frontier_threshold: 0.8, smart_threshold: 0.5, balanced_threshold: 0.3 });
    expect(manifest.exec_policy).toEqual({ allow_shell: false, allow_network: true, allow_file_write: true });
    expect(manifest.capabilities).toMatchObject({ llm_max_tokens: 1000, econ_spend: 2.5 });
  });
});

describe('parseManifest() refuses bad input with one message naming file, field and expectation', () => {
  it("refuses the seed's peer-to-peer and payment grants, and net_listen, as not supported by Loom", () => {
    expect(refusal('[capabilities]\nnet_listen = [8080]')).toBe(
      'cannot load manifest "a.toml": [capabilities].net_listen: not supported by Loom: no tool opens a listening socket (the daemon serves HTTP, MCP and A2A for its agents); remove the key',
    );
    for (const grant of ['ofp_discover = true', 'ofp_connect = ["peer-*"]', 'ofp_advertise = false']) {
      expect(refusal(`[capabilities]\n${grant}`)).toContain(`[capabilities].${grant.split(' ')[0]}: not supported by Loom: it has no peer-to-peer network`);
    }
    for (const grant of ['econ_earn = true', 'econ_transfer = ["treasurer"]']) {
      expect(refusal(`[capabilities]\n${grant}`)).toContain(`[capabilities].${grant.split(' ')[0]}: not supported by Loom: it has no payment system`);
    }
  });

  it('refuses a skills entry that is neither a skill name nor @org/skills/name[@version], naming the entry', () => {
    expect(refusal('skills = ["web-search", "Web Search"]')).toBe(
      'cannot load manifest "a.toml": skills[1]: expected a skill\'s name such as "note-taker" (lowercase letters, digits and single hyphens), or its qualified reference such as "@org/skills/note-taker" or "@org/skills/note-taker@1.0.0", got "Web Search"',
    );
    expect(refusal('skills = ["@acme/note-taker"]')).toContain("skills[0]: expected a skill's name");
    expect(
      parseManifest('skills = ["note-taker", "@acme/skills/note-taker", "@acme/skills/pdf-reader@1.2.0"]', { source: 'a.toml' }).manifest.skills,
    ).toHaveLength(3);
  });

  it('takes out of a stored manifest the skills entries an earlier Loom kept and never read, saying which', () => {
    const { manifest, dropped } = withoutRetiredKeys({ name: 'old', skills: ['web-search', 'Web Search', '@acme/skills/notes'] });
    expect(manifest['skills']).toEqual(['web-search', '@acme/skills/notes']);
    expect(dropped).toEqual(['skills[1]: "Web Search" names no skill (expected "name" or "@org/skills/name[@version]")']);
  });

  it('refuses an unknown trigger event, an agent_message trigger, a file trigger without a pattern and a proactive agent without triggers, naming the field', () => {
    const proactive = (trigger: string): string => `[schedule]\nmode = "proactive"\n[[schedule.triggers]]\n${trigger}`;
    expect(refusal(proactive('event = "cosmic_ray"'))).toBe(
      'cannot load manifest "a.toml": [schedule].triggers[0].event: unknown event "cosmic_ray"; expected one of file_created, file_changed, agent_spawned, agent_killed, agent_suspended, agent_resumed',
    );
    expect(refusal(proactive('event = "agent_message"'))).toContain(
      '[schedule].triggers[0].event: "agent_message" is not supported by Loom: the kernel publishes no event for a message between agents',
    );
    expect(refusal(proactive('event = "file_created"'))).toBe(
      'cannot load manifest "a.toml": [schedule].triggers[0].pattern: required when event = "file_created": the files to watch, e.g. pattern = "/data/inbox/*.json"',
    );
    expect(refusal('[schedule]\nmode = "proactive"')).toContain('[schedule].triggers: required when mode = "proactive": at least one [[schedule.triggers]]');
  });

  it('refuses a bad enum value', () => {
    expect(refusal('[schedule]\nmode = "sometimes"')).toBe(
      'cannot load manifest "a.toml": [schedule].mode: expected one of reactive, continuous, periodic, proactive, got "sometimes"',
    );
  });

  it('refuses an unknown key and suggests the near one', () => {
    expect(refusal('name = "x"\n[schedule]\nmoed = "reactive"')).toBe('cannot load manifest "a.toml": [schedule].moed: unknown key, did you mean "mode"?');
    expect(refusal('nmae = "x"')).toBe('cannot load manifest "a.toml": nmae: unknown key, did you mean "name"?');
  });

  it('refuses an unknown key with no near one by listing the expected keys', () => {
    expect(refusal('[exec_policy]\nsudo = true')).toBe(
      'cannot load manifest "a.toml": [exec_policy].sudo: unknown key, expected one of allow_shell, allow_network, allow_file_write',
    );
  });

  it('refuses a wrong type', () => {
    expect(refusal('[resources]\nmax_iterations = "fifty"')).toBe('cannot load manifest "a.toml": [resources].max_iterations: expected a number, got "fifty"');
    expect(refusal('[resources]\nmax_iterations = 1.5')).toBe('cannot load manifest "a.toml": [resources].max_iterations: expected an integer, got 1.5');
    expect(refusal('[capabilities]\nnetwork = "api.openai.com"')).toBe(
      'cannot load manifest "a.toml": [capabilities].network: expected an array, got "api.openai.com"',
    );
  });

  it('names the element of an array of tables', () => {
    expect(refusal('[[fallback_models]]\nprovider = "openai"\nmodel = "gpt-4o"\n[[fallback_models]]\nprovider = "acme"\nmodel = "m"')).toBe(
      'cannot load manifest "a.toml": fallback_models[1].provider: expected one of anthropic, openai, groq, openrouter, ollama, openai-compatible, got "acme"',
    );
  });

  it('refuses a missing required field', () => {
    expect(refusal('[model]\nprovider = "openai"')).toBe(
      'cannot load manifest "a.toml": [model].model: required with provider, e.g. model = "gpt-4o"; or leave out both provider and model to run on the daemon\'s default model',
    );
    expect(refusal('[model]\nmodel = "gpt-4o"')).toContain('[model].provider: required with model, e.g. provider = "openai"');
  });

  it("takes a [model] that names no model as settings for the daemon's default model, and refuses a key or URL without one", () => {
    const { manifest } = parseManifest('name = "a"\n[model]\nsystem_prompt = "Be brief."\ntemperature = 0.2\n', { source: 'a.toml' });
    expect(manifest.model).toMatchObject({ system_prompt: 'Be brief.', temperature: 0.2, max_tokens: 4096 });
    expect(namedModel(manifest.model)).toBeUndefined();
    expect(refusal('[model]\napi_key_env = "MY_KEY"')).toContain('[model].api_key_env: only used with the provider and model it belongs to');
  });

  it('refuses an openai-compatible model without base_url', () => {
    expect(refusal('[model]\nprovider = "openai-compatible"\nmodel = "m"')).toContain('[model].base_url: required when provider = "openai-compatible"');
  });

  it('refuses a periodic schedule without a cron, and a bad cron', () => {
    expect(refusal('[schedule]\nmode = "periodic"')).toContain('[schedule].cron: required when mode = "periodic"');
    expect(refusal('[schedule]\nmode = "periodic"\ncron = "every day"')).toContain(
      '[schedule].cron: expected a cron expression such as "0 9 * * *", got "every day"',
    );
  });

  it('says what a new name may hold, without the dot it may not', () => {
    expect(refusal('name = "bad 6"')).toContain('name: expected 1 to 64 letters, digits, "_" or "-", starting with a letter or digit; no "."');
    expect(refusal('name = "bad 6"')).not.toContain('".", "_"');
  });

  it('refuses a name that could be taken for an id', () => {
    expect(refusal('name = "6f1c2f0e-8d3a-4b5e-9f1a-2b3c4d5e6f70"')).toContain('name: expected a name, not a UUID');
  });

  it('gives line and column for a TOML syntax error', () => {
    expect(refusal('name = "x"\n[capabilities]\ntools = ["a",\n')).toMatch(/^cannot load manifest "a\.toml": TOML syntax error at line \d+, column \d+: /);
    expect(refusal('name = "x"\nname = "y"\n')).toMatch(/TOML syntax error at line 2, column \d+/);
  });

  it('gives line and column for a JSON syntax error, and shows the line with a caret under the column', () => {
    expect(refusal('{\n  "name": "x",\n}', 'a.json')).toMatch(/^cannot load manifest "a\.json": JSON syntax error: .*line 3 column 1/);
    expect(refusal('{\n  "name": "x",\n  "model": {"provider": "openai",}\n}', 'a.json').split('\n').slice(1)).toEqual([
      '  2:    "name": "x",',
      '  3:    "model": {"provider": "openai",}',
      `  ${' '.repeat('3:  '.length + '  "model": {"provider": "openai",'.length)}^`,
    ]);
    // A one-line body shows the part around the column, a tab as a space.
    const long = `{"description": "${'x'.repeat(5000)}",\t}`;
    const [, excerpt = '', caret = ''] = refusal(long, 'a.json').split('\n');
    expect(excerpt.length).toBeLessThan(100);
    expect(excerpt).toMatch(/^ {2}1: {2}…x+", }$/);
    expect(caret.indexOf('^')).toBe(excerpt.indexOf('}'));
  });

  it('refuses an empty manifest', () => {
    expect(refusal('  \n')).toBe('cannot load manifest "a.toml": the manifest is empty; it needs at least a name, e.g. name = "my-agent"');
  });

  it('reports how many more problems there are after the first', () => {
    const message = refusal('priority = "urgent"\n[schedule]\nmode = "sometimes"');
    expect(message.split('\n')[0]).toBe(
      'cannot load manifest "a.toml": [schedule].mode: expected one of reactive, continuous, periodic, proactive, got "sometimes"',
    );
    expect(message).toContain('and 1 more:');
    expect(message).toContain('priority: expected one of low, normal, high, critical, got "urgent"');
  });

  it('keeps a misplaced key in its table when the top level has it already, and says why it is refused', () => {
    const message = refusal('priority = "low"\n[resources]\npriority = "high"');
    expect(message).toContain('[resources].priority: unknown key');
    expect(message).toContain('"priority" is a top-level key');
  });
});

describe('loadManifestFile()', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-manifest-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a missing file by name', async () => {
    await expect(loadManifestFile('nope.toml', { cwd: dir })).rejects.toThrow('cannot load manifest "nope.toml": no such file');
  });

  it('reads JSON by extension even when it looks like TOML', async () => {
    await writeFile(join(dir, 'odd.json'), 'name = "x"');
    await expect(loadManifestFile('odd.json', { cwd: dir })).rejects.toThrow(/cannot load manifest "odd\.json": JSON syntax error/);
  });

  it('refuses a YAML file by its extension, naming the formats it reads', async () => {
    await writeFile(join(dir, 'helper.yaml'), 'name: helper\n');
    await expect(loadManifestFile('helper.yaml', { cwd: dir })).rejects.toThrow(
      'cannot load manifest "helper.yaml": a manifest is TOML (.toml) or JSON (.json), not YAML: write it in one of those',
    );
  });

  it('loads the JSON example', async () => {
    const { manifest } = await loadManifestFile(join(examples, 'assistant.json'));
    expect(manifest.name).toBe('assistant');
    // Its model sets only max_tokens: it runs on the daemon's default model.
    expect(manifest.model?.max_tokens).toBe(2048);
    expect(namedModel(manifest.model)).toBeUndefined();
  });

  it('refuses a directory', async () => {
    await expect(loadManifestFile(dir)).rejects.toThrow('it is a directory, not a file');
  });
});

describe('[capabilities] patterns', () => {
  it('refuses a network pattern with an unclosed bracket, naming the entry', () => {
    expect(refusal('[capabilities]\nnetwork = ["*.wikipedia.org", "[::1"]')).toBe(
      'cannot load manifest "a.toml": [capabilities].network[1]: expected a host such as "api.openai.com" or "*.example.com:443", got "[::1" (unclosed "[")',
    );
  });

  it('refuses a network pattern holding a NUL, naming the entry', () => {
    expect(refusal('[capabilities]\nnetwork = ["\\u0000"]')).toContain('[capabilities].network[0]: expected a pattern without control characters');
  });

  it('refuses a CIDR range in network, saying it is not supported', () => {
    expect(refusal('[capabilities]\nnetwork = ["10.0.0.0/8"]')).toContain('[capabilities].network[0]: expected a host such as');
    expect(refusal('[capabilities]\nnetwork = ["10.0.0.0/8"]')).toContain('CIDR ranges are not supported');
  });

  it('refuses a relative file_read pattern, naming the entry', () => {
    expect(refusal('[capabilities]\nfile_read = ["/data/*", "reports/*"]')).toContain(
      '[capabilities].file_read[1]: expected an absolute path or one starting with "*", such as "/data/*", got "reports/*"',
    );
  });

  it('refuses a shell pattern with an unclosed quote, naming the entry', () => {
    expect(refusal(`[capabilities]\nshell = ["git commit -m 'wip"]`)).toContain(
      `[capabilities].shell[0]: expected a command pattern such as "git status" or "git **", got "git commit -m 'wip" ("'" at position 15 is an unclosed quote)`,
    );
  });

  it('refuses an empty pattern of any list, naming the entry', () => {
    expect(refusal('[capabilities]\nagent_message = ["summarizer", ""]')).toBe(
      'cannot load manifest "a.toml": [capabilities].agent_message[1]: expected a non-empty pattern',
    );
  });
});
