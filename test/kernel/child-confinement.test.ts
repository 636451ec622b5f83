import { describe, expect, it } from 'vitest';
import { capabilitiesFromManifest } from '../../src/manifest/index.ts';
import { CapabilityEscalationError } from '../../src/errors/index.ts';
import { type ConfinementContext, confineChild } from '../../src/kernel/index.ts';
import type { Manifest } from '../../src/manifest/index.ts';
import { manifest } from '../support/test-kernel.ts';

const context: ConfinementContext = {
  workspaceOf: (agent) => agent.workspace ?? `/home/loom/workspaces/${agent.name}`,
  defaultModel: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  now: Date.UTC(2026, 10, 22, 12),
};

const MODEL = '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n';

function parentOf(toml: string): { name: string; manifest: Manifest; capabilities: ReturnType<typeof capabilitiesFromManifest> } {
  const parsed = manifest(`name = "boss"\n${toml}`);
  return { name: 'boss', manifest: parsed, capabilities: capabilitiesFromManifest(parsed.capabilities) };
}

/** The refusal's fields and message, or the confined manifest. */
function confine(parentToml: string, childToml: string): Manifest {
  return confineChild(parentOf(parentToml), manifest(`name = "kid"\n${childToml}`), context);
}

function refusal(parentToml: string, childToml: string): { message: string; fields: string[] } {
  try {
    confine(parentToml, childToml);
  } catch (error) {
    if (!(error instanceof CapabilityEscalationError)) throw error;
    const fields = (error.details?.['fields'] as { field: string }[]).map((entry) => entry.field);
    return { message: error.message, fields };
  }
  throw new Error('the child was accepted');
}

describe('confineChild()', () => {
  it("places a child without a workspace inside its parent's, and a relative one there too", () => {
    expect(confine('', '').workspace).toBe('/home/loom/workspaces/boss/agents/kid');
    expect(confine('', 'workspace = "scratch"').workspace).toBe('/home/loom/workspaces/boss/scratch');
  });

  it("refuses a workspace that climbs out of the parent's, and one outside what the parent may read and write", () => {
    expect(refusal('', 'workspace = "../victim"')).toMatchObject({ fields: ['workspace'] });
    expect(refusal('[capabilities]\nfile_read = ["/srv/*"]', 'workspace = "/srv/data"').message).toContain(
      'workspace "/srv/data" lies outside the parent\'s workspace "/home/loom/workspaces/boss" and outside what its [capabilities].file_read and file_write grant',
    );
    expect(confine('[capabilities]\nfile_read = ["/srv/*"]\nfile_write = ["/srv/*"]', 'workspace = "/srv/data"').workspace).toBe('/srv/data');
  });

  it('names every field that exceeds the parent in one message, after the capabilities', () => {
    const { message, fields } = refusal(
      `${MODEL}[capabilities]\ntools = ["file_read"]`,
      `module = "python:agent.py"\nworkspace = "/"\n[capabilities]\ntools = ["shell_exec"]\n[resources]\nmax_iterations = 500\n`,
    );
    expect(fields).toEqual(['[capabilities]', 'workspace', 'module', '[resources].max_iterations']);
    expect(message).toMatch(
      /^cannot spawn agent "kid" as a child of "boss": cannot give a child agent capabilities its parent lacks: \[capabilities\]\.tools "shell_exec"/,
    );
    expect(message).toContain('Other fields exceed the parent: workspace "/" lies outside');
    expect(message).toContain('module "python:agent.py" is code the parent does not run');
    expect(message).toContain("[resources].max_iterations 500 is more than the parent's 50");
  });

  it("lets a child that leaves a limit at its default run under its parent's, and refuses one set higher", () => {
    const child = confine('[resources]\nmax_tokens_per_hour = 20000\nmax_cost_per_hour = 2.5\nmax_iterations = 10\npriority = "low"', '');
    expect(child.resources).toEqual({ max_tokens_per_hour: 20_000, max_cost_per_hour: 2.5, max_iterations: 10, max_tokens_per_day: 0, max_cost_per_day: 0 });
    expect(refusal('[resources]\nmax_cost_per_hour = 2.5', '[resources]\nmax_cost_per_hour = 5').message).toContain(
      "[resources].max_cost_per_hour 5 is more than the parent's 2.5",
    );
    expect(confine('[resources]\nmax_tokens_per_hour = 20000', '[resources]\nmax_tokens_per_hour = 500').resources.max_tokens_per_hour).toBe(500);
  });

  it('reads a limit of 0 as none, above every number: refused under a limited parent, allowed under an unlimited one', () => {
    expect(refusal('[resources]\nmax_tokens_per_hour = 1000', '[resources]\nmax_tokens_per_hour = 0').message).toContain(
      "[resources].max_tokens_per_hour 0 (no limit) is more than the parent's 1000",
    );
    expect(confine('[resources]\nmax_tokens_per_hour = 0', '[resources]\nmax_tokens_per_hour = 0').resources.max_tokens_per_hour).toBe(0);
    expect(confine('[resources]\nmax_tokens_per_hour = 0', '[resources]\nmax_tokens_per_hour = 700').resources.max_tokens_per_hour).toBe(700);
    // max_cost_per_hour is 0 by default: a child that leaves it out runs under its parent's.
    expect(confine('[resources]\nmax_cost_per_hour = 2.5', '').resources.max_cost_per_hour).toBe(2.5);
    expect(confine('[resources]\nmax_cost_per_hour = 2.5', '[resources]\nmax_cost_per_hour = 0').resources.max_cost_per_hour).toBe(2.5);
  });

  it("merges the parent's restrictions into the child whether or not it repeats them", () => {
    const child = confine(
      'tool_blocklist = ["shell_exec"]\ntool_allowlist = ["file_read", "file_write", "shell_exec"]\nmcp_servers = ["github"]\n[exec_policy]\nallow_network = false\n[autonomous]\napproval_required_for = ["file_write"]\nmax_actions_per_cycle = 10',
      'tool_blocklist = ["web_fetch"]\n[exec_policy]\nallow_shell = false\n[autonomous]\napproval_required_for = ["agent_spawn"]\n',
    );
    expect(child.tool_blocklist).toEqual(['shell_exec', 'web_fetch']);
    expect(child.tool_allowlist).toEqual(['file_read', 'file_write', 'shell_exec']);
    expect(child.mcp_servers).toEqual(['github']);
    expect(child.exec_policy).toEqual({ allow_shell: false, allow_network: false, allow_file_write: true });
    expect(child.autonomous).toEqual({ approval_required_for: ['file_write', 'agent_spawn'], max_actions_per_cycle: 10, idle_timeout_seconds: 3600 });
    expect(refusal('tool_allowlist = ["file_read"]', 'tool_allowlist = ["file_read", "shell_exec"]').message).toContain(
      'tool_allowlist "shell_exec" is not in the parent\'s tool_allowlist ("file_read")',
    );
  });

  it('lets a child think only with models its parent may call, and send a key only where the parent sends it', () => {
    // Without llm_query, the parent's own models (here the daemon's default) are the ones it may call.
    expect(refusal('', '[model]\nprovider = "openai"\nmodel = "gpt-4o"').message).toContain(
      '[model] calls model "openai/gpt-4o", which the parent may not call (it calls only "anthropic/claude-sonnet-4-5")',
    );
    expect(confine('', '').model).toBeUndefined();
    expect(confine('[capabilities]\nllm_query = ["anthropic/*"]', '[model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"').model?.model).toBe(
      'claude-haiku-4-5',
    );
    expect(refusal(MODEL, '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "https://collector.example/v1"').message).toContain(
      '[model] would send ANTHROPIC_API_KEY to "https://collector.example/v1", where the parent does not send it',
    );
    expect(refusal(MODEL, '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\napi_key_env = "AWS_SECRET_ACCESS_KEY"').fields).toEqual(['[model]']);
    // A parent that may read the key and reach the host could send it there itself.
    const trusted = `${MODEL}[capabilities]\nenv_read = ["ANTHROPIC_API_KEY"]\nnetwork = ["proxy.internal:443"]`;
    expect(confine(trusted, '[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "https://proxy.internal/v1"').model?.base_url).toBe(
      'https://proxy.internal/v1',
    );
    expect(refusal(MODEL, '[[fallback_models]]\nprovider = "groq"\nmodel = "llama-3.3-70b-versatile"').fields).toEqual(['[[fallback_models]][0]']);
  });

  it("keeps the parent's token cap and model output limit", () => {
    const child = confine(`${MODEL}max_tokens = 1024\n[capabilities]\nllm_max_tokens = 500`, MODEL);
    expect(child.capabilities.llm_max_tokens).toBe(500);
    expect(child.model?.max_tokens).toBe(1024);
    expect(refusal(`${MODEL}max_tokens = 1024`, `${MODEL}max_tokens = 8000`).message).toContain("[model].max_tokens 8000 is more than the parent's 1024");
    // A child without [model] (the default model) carries the parent's output limit as its token cap.
    const onDefault = confineChild(parentOf(`${MODEL}max_tokens = 1024`), manifest('name = "kid"'), {
      ...context,
      defaultModel: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
    });
    expect(onDefault.capabilities.llm_max_tokens).toBe(1024);
  });

  it('lets a child act unasked only if its parent does, and no more often', () => {
    expect(refusal('', '[schedule]\nmode = "continuous"').message).toContain(
      '[schedule].mode "continuous" acts unasked on a timer, but the parent is "reactive"',
    );
    expect(confine('[schedule]\nmode = "continuous"\ninterval_seconds = 600', '[schedule]\nmode = "continuous"').schedule.interval_seconds).toBe(600);
    expect(refusal('[schedule]\nmode = "continuous"\ninterval_seconds = 600', '[schedule]\nmode = "continuous"\ninterval_seconds = 5').fields).toEqual([
      '[schedule].interval_seconds',
    ]);
    expect(refusal('[schedule]\nmode = "periodic"\ncron = "0 9 * * *"', '[schedule]\nmode = "periodic"\ncron = "* * * * *"').message).toContain(
      '[schedule].cron "* * * * *" runs more often (every 60 s at the shortest) than the parent (every 86400 s)',
    );
    expect(confine('[schedule]\nmode = "periodic"\ncron = "0 * * * *"', '[schedule]\nmode = "periodic"\ncron = "30 9 * * 1"').schedule.cron).toBe('30 9 * * 1');
    expect(
      refusal(
        '[schedule]\nmode = "proactive"\n[[schedule.triggers]]\nevent = "agent_spawned"',
        '[schedule]\nmode = "proactive"\n[[schedule.triggers]]\nevent = "file_created"\npattern = "/etc/*"',
      ).fields,
    ).toEqual(['[[schedule.triggers]][0].pattern']);
  });

  it("holds a numeric tool setting the parent leaves out to the tool's default, and refuses one no default bounds", () => {
    expect(refusal('', '[tools.web_fetch]\nmax_content_bytes = 2000000000').message).toContain(
      '[tools.web_fetch].max_content_bytes 2000000000 is more than the 1000000 the parent runs with',
    );
    expect(refusal('', '[tools.web_search]\nmax_results = 100000').fields).toEqual(['[tools.web_search].max_results']);
    expect(confine('', '[tools.web_fetch]\nmax_content_bytes = 1000').tools['web_fetch']).toEqual({ max_content_bytes: 1000 });
    expect(refusal('', '[tools.shell_exec]\nmax_output = 5').message).toContain('[tools.shell_exec].max_output 5 is set where the parent sets nothing');
  });

  it("checks the judge of a child's forged tools as any model it calls, the default model it falls back to included", () => {
    const parent = `${MODEL}[capabilities]\ntools = ["forge_tool"]\nllm_query = ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"]\n[emergent]\nenabled = true\njudge_model = "openai/gpt-4o-mini"\n`;
    const child = (judge: string): string => `${MODEL}[capabilities]\ntools = ["forge_tool"]\n[emergent]\nenabled = true\n${judge}`;
    expect(confine(parent, child('judge_model = "openai/gpt-4o-mini"\n')).emergent?.judge_model).toBe('openai/gpt-4o-mini');
    // Without a judge_model the kernel judges with the default model, which this parent does not call.
    const escape = { ...context, defaultModel: { provider: 'openai' as const, model: 'o1-pro' } };
    const refused = (): Manifest => confineChild(parentOf(parent), manifest(`name = "kid"\n${child('')}`), escape);
    expect(refused).toThrow(CapabilityEscalationError);
    expect(refused).toThrow(/the default model as \[emergent\]'s judge \(no judge_model\) calls model "openai\/o1-pro"/);
    expect(refusal(parent, child('promotion_judge_model = "openai/o1-pro"\njudge_model = "openai/gpt-4o-mini"\n')).fields).toContain(
      '[emergent].promotion_judge_model',
    );
  });

  it('lets tool settings only narrow: another endpoint for a keyed tool is refused', () => {
    expect(refusal('', '[tools.web_search]\nprovider = "tavily"\nbase_url = "https://collector.example"').fields).toEqual([
      '[tools.web_search].provider',
      '[tools.web_search].base_url',
    ]);
    expect(refusal('[tools.web_fetch]\ntimeout_seconds = 10', '[tools.web_fetch]\ntimeout_seconds = 300').message).toContain(
      "[tools.web_fetch].timeout_seconds 300 is more than the parent's 10",
    );
    expect(
      confine('[tools.web_search]\nbase_url = "https://search.internal"\nmax_results = 5', '[tools.web_search]\nmax_results = 3').tools['web_search'],
    ).toEqual({ base_url: 'https://search.internal', max_results: 3 });
  });
});
