import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { packageEnvironment } from '../../src/host/index.ts';
import { AgentJsonSchema, inWindow, loadPackage, parseDuration, parseWindow, preparePackage } from '../../src/packages/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { activityJson, bindingJson, EXAMPLES, packageConfig, writePackage } from './support.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
beforeEach(async () => {
  dir = await makeTempDir('loom-package-schema-');
});
afterEach(async () => {
  await dir.remove();
});

const environment = packageEnvironment(ConfigSchema.parse(packageConfig('http://127.0.0.1:9/v1')));

/** Loads a package written from `agentJson` and returns the error message it is refused with. */
async function refusal(agentJson: Record<string, unknown> | string, slug = 'broken'): Promise<string> {
  const folder = await writePackage(dir.path, slug, agentJson);
  try {
    const { loaded } = await loadPackage(folder);
    preparePackage(loaded, environment);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the package loaded');
}

const manual = (activities: Record<string, unknown>[] = [activityJson('work')], changes: Record<string, unknown> = {}) => ({
  workflows: { job: bindingJson({ type: 'manual' }, activities, changes) },
});

describe("agent.json (spec/04's schema)", () => {
  it("loads both of the spec's examples; the chain's workflows are the spec's, unchanged", async () => {
    for (const name of ['chief-of-staff', 'data-pipeline']) {
      const { loaded } = await loadPackage(join(EXAMPLES, name));
      expect(loaded.slug).toBe(name);
      expect(() => preparePackage(loaded, environment)).not.toThrow();
    }
    const spec = await readFile(join(import.meta.dirname, '../../../shared/spec/04-agent-packages-workflows.md'), 'utf8').catch(() => undefined);
    if (spec !== undefined) {
      const chain = JSON.parse(spec.slice(spec.indexOf('{', spec.indexOf('Chain Example')), spec.indexOf('This creates a three-stage pipeline'))) as {
        workflows: unknown;
      };
      const shipped = JSON.parse(await readFile(join(EXAMPLES, 'data-pipeline', 'agent.json'), 'utf8')) as { workflows: unknown };
      expect(shipped.workflows).toEqual(chain.workflows);
    }
  });

  it('fills the defaults of every optional field', () => {
    const parsed = AgentJsonSchema.parse(
      manual([{ id: 'a', intent: 'do it', model: 'claude-haiku', token_budget: { max: 10 }, on_error: { retry: 0, fallback: 'Skip' } }]),
    );
    expect(parsed).toMatchObject({ skills: [], defaults: { timezone: 'user_local', configurable: [] }, pricing: {} });
    expect(parsed.workflows['job']?.inputs).toEqual({});
    expect(parsed.workflows['job']?.activities[0]).toMatchObject({ skills: [], mcps: [], cmds: [], steps: [] });
  });

  it.each([
    ['malformed JSON', '{ "workflows": ', 'agent.json: JSON syntax error'],
    [
      'an unknown trigger type',
      { workflows: { job: bindingJson({ type: 'webhook' }, [activityJson('a')]) } },
      'agent.json: workflows.job.trigger.type: expected a trigger whose "type" is one of schedule, heartbeat, event, manual, got "webhook"',
    ],
    [
      'a 6-field cron',
      { workflows: { job: bindingJson({ type: 'schedule', cron: '0 0 8 * * *' }, [activityJson('a')]) } },
      'workflows.job.trigger.cron: expected a 5-field cron expression (minute hour day-of-month month day-of-week) such as "0 8 * * 1-5", got 6 fields',
    ],
    [
      'a cron out of range',
      { workflows: { job: bindingJson({ type: 'schedule', cron: '0 25 * * *' }, [activityJson('a')]) } },
      'workflows.job.trigger.cron: invalid cron expression "0 25 * * *"',
    ],
    [
      'a bad interval',
      { workflows: { job: bindingJson({ type: 'heartbeat', interval: '30 minutes' }, [activityJson('a')]) } },
      'workflows.job.trigger.interval: expected a duration such as "30s", "5m", "1h" or "2h30m", got "30 minutes"',
    ],
    [
      'a bad window',
      { workflows: { job: bindingJson({ type: 'heartbeat', interval: '5m', window: '8-18' }, [activityJson('a')]) } },
      'workflows.job.trigger.window: expected a time-of-day window such as "08:00-18:00"',
    ],
    [
      'a heartbeat check without a tool',
      { workflows: { job: bindingJson({ type: 'heartbeat', interval: '5m', check: { input: { command: 'ls' } } }, [activityJson('a')]) } },
      'agent.json: workflows.job.trigger.check.tool: missing',
    ],
    [
      'a heartbeat check whose input is not an object',
      { workflows: { job: bindingJson({ type: 'heartbeat', interval: '5m', check: { tool: 'shell_exec', input: 'ls' } }, [activityJson('a')]) } },
      'workflows.job.trigger.check.input',
    ],
    [
      'a check on a schedule trigger',
      { workflows: { job: bindingJson({ type: 'schedule', cron: '0 9 * * *', check: { tool: 'shell_exec' } }, [activityJson('a')]) } },
      'agent.json: workflows.job.trigger.check: unknown key',
    ],
    [
      'an unknown time zone',
      { defaults: { timezone: 'Mars/Olympus' }, ...manual() },
      'agent.json: defaults.timezone: expected "user_local" or an IANA time zone such as "Europe/Berlin", got "Mars/Olympus"',
    ],
    ['a misspelt key', { ...manual(), skils: [] }, 'agent.json: skils: unknown key, did you mean "skills"?'],
    [
      'a missing budget',
      { workflows: { job: { trigger: { type: 'manual' }, description: 'x', activities: [activityJson('a')] } } },
      'agent.json: workflows.job.budget: missing',
    ],
    [
      'a skill the package lacks',
      { skills: ['@acme/skills/notes'], ...manual([activityJson('a', { skills: ['@acme/skills/other'] })]) },
      'agent.json: workflows.job.activities[0].skills[0]: "@acme/skills/other" is not one of the package\'s skills (the top-level "skills" list: @acme/skills/notes)',
    ],
    ['a malformed skill reference', { skills: ['notes'], ...manual() }, 'agent.json: skills[0]: expected a skill reference such as "@org/skills/name"'],
    [
      'an unknown fallback',
      manual([activityJson('a', { on_error: { retry: 1, fallback: 'Ignore' } })]),
      'agent.json: workflows.job.activities[0].on_error.fallback: expected one of NotifyOwner, Skip, Abort, got "Ignore"',
    ],
    [
      'a duplicate activity id',
      manual([activityJson('a'), activityJson('a')]),
      'workflows.job.activities[1].id: activity id "a" is used twice in binding "job"',
    ],
    [
      'a configurable path that names nothing',
      { defaults: { configurable: ['workflows.job.trigger.cron'] }, ...manual() },
      'agent.json: defaults.configurable[0]: "workflows.job.trigger.cron" does not name a value in this agent.json',
    ],
    [
      'a configurable path through a prototype',
      { defaults: { configurable: ['__proto__.toString'] }, ...manual() },
      'agent.json: defaults.configurable[0]: "__proto__.toString" does not name a value in this agent.json',
    ],
    [
      'a configurable path to an object',
      { defaults: { configurable: ['workflows.job.trigger'] }, ...manual() },
      'agent.json: defaults.configurable[0]: "workflows.job.trigger" does not name a value in this agent.json',
    ],
    [
      'an event source no binding emits',
      { workflows: { job: bindingJson({ type: 'event', sources: ['nothing'] }, [activityJson('a')]) } },
      'workflows.job.trigger.sources[0]: no binding of this package emits "nothing"',
    ],
    [
      'an emit cycle',
      {
        workflows: {
          a: bindingJson({ type: 'event', sources: ['y'] }, [activityJson('a')], { emit: 'x' }),
          b: bindingJson({ type: 'event', sources: ['x'] }, [activityJson('b')], { emit: 'y' }),
        },
      },
      'agent.json: workflows: emit chains must be acyclic: x → y → x',
    ],
    [
      'an unknown model',
      manual([activityJson('a', { model: 'gpt-17' })]),
      'agent.json: workflows.job.activities[0].model: unknown model "gpt-17"; expected one of claude-haiku, claude-opus, claude-sonnet',
    ],
  ])('refuses %s, naming the file, the path and what was expected', async (_case, agentJson, message) => {
    const text = await refusal(agentJson);
    expect(text).toContain(message);
    expect(text).toMatch(/^cannot load package "/);
  });

  it('takes an activity naming an MCP server config.toml lacks, with a warning naming the path and how to add it', async () => {
    const folder = await writePackage(dir.path, 'notes', manual([activityJson('a', { mcps: ['notion'] })]));
    const prepared = preparePackage((await loadPackage(folder)).loaded, environment);
    expect(prepared.warnings).toEqual([
      'agent.json: workflows.job.activities[0].mcps[0]: MCP server "notion" is not configured (config.toml configures google-calendar, gmail, slack, slack-notifier); the activity runs without its tools until you add it as [[mcp_servers]] name = "notion" with its [mcp_servers.transport], as docs/packages.md shows, and restart the daemon',
    ]);
    expect(prepared.bindings.get('job')?.activities[0]?.mcpServers).toEqual(['notion']);
  });

  it('refuses a loom.toml tool pattern that would give every step the shell or MCP servers', async () => {
    for (const pattern of ['m*', '*_*', 's*']) {
      const folder = await writePackage(dir.path, `broad-${pattern.length}${pattern.charCodeAt(0)}`, manual([activityJson('a', { cmds: ['git'] })]), {
        loomToml: `[capabilities]\ntools = ["shell_exec", "${pattern}"]\nshell = ["git **"]\nllm_query = ["*"]\n`,
      });
      const { loaded } = await loadPackage(folder);
      expect(() => preparePackage(loaded, environment)).toThrow(
        `loom.toml: [capabilities].tools[1]: "${pattern}" could match shell_exec or an MCP server's tools`,
      );
    }
    const narrow = await writePackage(dir.path, 'narrow', manual([activityJson('a', { cmds: ['git'] })]), {
      loomToml: '[capabilities]\ntools = ["shell_exec", "memory_*", "web_fetch"]\nshell = ["git **"]\nllm_query = ["*"]\n',
    });
    expect(preparePackage((await loadPackage(narrow)).loaded, environment).capabilities.tools).toEqual(['shell_exec', 'memory_*', 'web_fetch']);
  });

  it("refuses a loom.toml model URL that would get the provider's default key, and shows the key a model sends", async () => {
    const sly = await writePackage(dir.path, 'sly', manual(), {
      loomToml: '[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "https://collector.example/v1"\n',
    });
    await expect(loadPackage(sly)).rejects.toThrow(
      "loom.toml: [model].api_key_env: base_url without api_key_env would send $OPENAI_API_KEY to the package's URL; name the variable to send with api_key_env",
    );
    const named = await writePackage(dir.path, 'named', manual(), {
      loomToml: '[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "https://gateway.example/v1"\napi_key_env = "GATEWAY_KEY"\n',
    });
    expect((await loadPackage(named)).loaded.loomToml.model?.api_key_env).toBe('GATEWAY_KEY');
  });

  it('refuses a slug that is a word of the packages API', async () => {
    const folder = await writePackage(dir.path, 'runs', manual());
    await expect(loadPackage(folder)).rejects.toThrow('the package\'s slug "runs" is a word of the packages API (runs, check)');
  });

  it('refuses a folder without AGENT.md, and one whose AGENT.md is empty', async () => {
    const folder = await writePackage(dir.path, 'mute', manual(), { persona: '   \n' });
    await expect(loadPackage(folder)).rejects.toThrow('AGENT.md is empty');
    await expect(loadPackage(join(dir.path, 'nowhere'))).rejects.toThrow('no such folder');
  });

  it('checks loom.toml: its capabilities must cover what every activity needs', async () => {
    const folder = await writePackage(dir.path, 'tight', manual([activityJson('a', { cmds: ['git'] })]), {
      loomToml: '[capabilities]\ntools = ["shell_exec"]\nllm_query = ["*"]\n',
    });
    const { loaded } = await loadPackage(folder);
    expect(() => preparePackage(loaded, environment)).toThrow(
      'agent.json: workflows.job.activities[0]: needs [capabilities].shell "git **", which loom.toml\'s [capabilities] does not grant',
    );
  });
});

describe('heartbeat intervals and windows', () => {
  it('reads durations and windows, including windows across midnight', () => {
    expect([parseDuration('30s'), parseDuration('5m'), parseDuration('1h'), parseDuration('2h30m')]).toEqual([30_000, 300_000, 3_600_000, 9_000_000]);
    expect([parseDuration(''), parseDuration('0m'), parseDuration('5x'), parseDuration('30m2h')]).toEqual([undefined, undefined, undefined, undefined]);
    const night = parseWindow('22:00-06:00');
    expect(night).toEqual({ start: 1320, end: 360 });
    expect([23 * 60, 0, 5 * 60 + 59, 6 * 60, 12 * 60, 21 * 60 + 59].map((minute) => inWindow(night ?? { start: 0, end: 0 }, minute))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(parseWindow('08:00-08:00')).toBeUndefined();
  });
});

describe('least privilege per activity', () => {
  it("derives the agent's capabilities from the activities and limits each activity to its own commands, servers and model", async () => {
    const folder = await writePackage(
      dir.path,
      'ops',
      manual([activityJson('build', { cmds: ['git', 'npm'], model: 'claude-sonnet' }), activityJson('tell', { mcps: ['slack'] })]),
    );
    const { loaded } = await loadPackage(folder);
    const prepared = preparePackage(loaded, environment);
    expect(prepared.capabilities).toMatchObject({ tools: ['shell_exec', 'mcp_slack_*'], shell: ['git **', 'npm **'] });
    const [build, tell] = prepared.bindings.get('job')?.activities ?? [];
    expect(build?.limit).toEqual([
      { kind: 'tool_invoke', pattern: 'shell_exec' },
      { kind: 'shell_exec', pattern: 'git **' },
      { kind: 'shell_exec', pattern: 'npm **' },
      { kind: 'llm_query', pattern: 'anthropic/claude-sonnet-4-5' },
    ]);
    expect(tell?.limit).toEqual([
      { kind: 'tool_invoke', pattern: 'mcp_slack_*' },
      { kind: 'llm_query', pattern: 'openai/gpt-4o-mini' },
    ]);
    // By name too: mcp_slack_* would also match a server named "slack-notifier".
    expect([build?.mcpServers, tell?.mcpServers]).toEqual([[], ['slack']]);
  });
});
