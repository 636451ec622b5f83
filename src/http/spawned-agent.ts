import { type AgentDetailView, type AgentView, type OfferedSkills, toAgentSkillsView } from '../kernel/index.ts';
import type { Manifest } from '../manifest/index.ts';
import { type ModelReadinessOptions, modelWarnings } from '../models/index.ts';
// An entry past the index: the SDKs load on first use (test/architecture/lazy-sdks.test.ts).
import { agentToolClash } from '../mcp/server/agent-tools.ts';

/** The agents a spawn or update reads: one by reference, and all of them (to find a clash of their MCP tools). */
export interface AgentLookup {
  get(reference: string): AgentDetailView;
  list(): AgentView[];
}

/** What an agent's detail and a spawn's warnings are checked against. */
export interface SpawnCheckOptions {
  /** The default model and the environment the agent's models are called with: a spawn warns when they cannot be called. */
  readiness?: ModelReadinessOptions | undefined;
  /** The installed skills a manifest's `skills` offer: the detail shows them, a spawn warns of those it names and cannot have. */
  skills?: ((allowlist: readonly string[]) => Promise<OfferedSkills>) | undefined;
}

/** An agent's detail as `GET /api/agents/{agent}` shows it (with its skills when `skills` is given), and what the skills check found. */
export async function agentDetail(
  agents: AgentLookup,
  reference: string,
  options: SpawnCheckOptions,
): Promise<{ detail: AgentDetailView; offered: OfferedSkills | undefined }> {
  const view = agents.get(reference);
  const offered = await options.skills?.(view.manifest.skills);
  return { detail: offered === undefined ? view : { ...view, skills: toAgentSkillsView(offered) }, offered };
}

/**
 * A spawned or updated agent as `POST /api/agents` and `PUT /api/agents/{agent}` answer, and as
 * the CLI shows it without a daemon: its detail, with the manifest's `warnings` and why it cannot
 * run here (a model it cannot call, its MCP tool taken by another agent, a skill it cannot have).
 */
export async function spawnedAgent(
  agents: AgentLookup,
  view: AgentView,
  manifest: Manifest,
  options: SpawnCheckOptions,
  manifestWarnings: readonly string[] = [],
): Promise<AgentDetailView & { warnings: string[] }> {
  const { detail, offered } = await agentDetail(agents, view.id, options);
  const models = options.readiness === undefined ? [] : await modelWarnings(view.name, manifest, options.readiness);
  return { ...detail, warnings: [...manifestWarnings, ...models, ...agentToolClash(view.name, agents.list()), ...(offered?.problems ?? [])] };
}
