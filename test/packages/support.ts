import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'smol-toml';

/** The example packages shipped in `examples/packages/`. */
export const EXAMPLES = join(import.meta.dirname, '../../examples/packages');

/** An activity as agent.json writes it, with spec/04's required fields filled. */
export function activityJson(id: string, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, intent: `Do ${id}`, model: 'claude-haiku', token_budget: { max: 2000 }, on_error: { retry: 0, fallback: 'Abort' }, ...changes };
}

/** A binding as agent.json writes it. */
export function bindingJson(
  trigger: Record<string, unknown>,
  activities: Record<string, unknown>[],
  changes: Record<string, unknown> = {},
): Record<string, unknown> {
  return { trigger, description: 'a test binding', activities, budget: { total_per_run: 10_000, cost_estimate: '~$0.01' }, ...changes };
}

/** Writes a package folder `<dir>/<slug>` and returns its path. */
export async function writePackage(
  dir: string,
  slug: string,
  agentJson: Record<string, unknown> | string,
  options: { persona?: string; loomToml?: string; skills?: Record<string, string> } = {},
): Promise<string> {
  const folder = join(dir, slug);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'AGENT.md'), options.persona ?? `You are ${slug}.\n`);
  await writeFile(join(folder, 'agent.json'), typeof agentJson === 'string' ? agentJson : JSON.stringify(agentJson, null, 2));
  if (options.loomToml !== undefined) await writeFile(join(folder, 'loom.toml'), options.loomToml);
  for (const [name, text] of Object.entries(options.skills ?? {})) {
    await mkdir(join(folder, 'skills', name), { recursive: true });
    await writeFile(join(folder, 'skills', name, 'SKILL.md'), text);
  }
  return folder;
}

/** The config every package test uses: the aliases point at the scripted model server; the MCP servers the examples name exist. */
export function packageConfig(modelUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    scheduler: { timezone: 'UTC' },
    models: {
      aliases: {
        'claude-sonnet': { provider: 'anthropic', model: 'claude-sonnet-4-5', base_url: modelUrl },
        'claude-haiku': { provider: 'openai', model: 'gpt-4o-mini', base_url: modelUrl },
      },
    },
    mcp_servers: ['google-calendar', 'gmail', 'slack', 'slack-notifier'].map((name) => ({ name, transport: { type: 'stdio', command: 'node' } })),
    ...extra,
  };
}

/** {@link packageConfig} as config.toml text. */
export function packageConfigToml(modelUrl: string, extra: Record<string, unknown> = {}): string {
  return stringify(packageConfig(modelUrl, extra));
}
