import type { Capability } from '../capabilities/index.ts';
import { type Manifest, namedModel } from '../manifest/index.ts';
import { checkPrimaryModel, modelName, type ModelTarget } from '../models/index.ts';
import type { AgentView as WireAgentView, CannotRunView } from '../wire/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { OfferedSkills } from './agent-skills.ts';

export type { CannotRunView };

/** The model an agent's `[model]` names, as `provider/model`; null when it runs on the daemon's default model. */
function modelNameOf(manifest: Manifest): string | null {
  const named = namedModel(manifest.model);
  return named === undefined ? null : modelName(named);
}

/**
 * An agent as the CLI (`--json`) and the HTTP API show it: src/wire's `AgentView`, with the
 * daemon's own types for its schedule mode and capabilities.
 */
export interface AgentView extends Omit<WireAgentView, 'schedule' | 'capabilities'> {
  schedule: Manifest['schedule']['mode'];
  capabilities: Capability[];
}

/** The daemon's settings a view reads: its `[default_model]`, and the environment model keys are read from. */
export interface AgentViewContext {
  defaultModel?: ModelTarget | undefined;
  env?: Readonly<Record<string, string | undefined>> | undefined;
}

function cannotRunOf(manifest: Manifest, context: AgentViewContext): CannotRunView | null {
  const problem = checkPrimaryModel(manifest, context);
  if (problem === undefined || problem.kind === 'unreachable') return null;
  return { kind: problem.kind, model: problem.model, reason: problem.problem, fix: problem.fix };
}

/** The view of an agent, with its full manifest (for `show`). */
export interface AgentDetailView extends AgentView {
  manifest: Manifest;
  /**
   * What its `skills` offer it of the installed skills, and what they name that cannot be
   * offered: filled in by the doors that read the skills folder (`GET /api/agents/{agent}`,
   * `loom agent show`), else absent.
   */
  skills?: AgentSkillsView;
}

/** An agent's skills as `loom agent show` shows them: each offered (in its prompt whole, or listed only), and the problems. */
export type AgentSkillsView = Omit<OfferedSkills, 'prompt'>;

/** The view of what an agent is offered, without the prompt's text. */
export function toAgentSkillsView(offered: OfferedSkills): AgentSkillsView {
  const { prompt: _prompt, ...view } = offered;
  return view;
}

/**
 * Builds the view of a live agent; `defaultModel` is the daemon's `[default_model]`, `env` the
 * environment its model keys are read from (without it, a missing key is not seen).
 */
export function toAgentView(entry: AgentEntry, defaultModel?: ModelTarget, env?: AgentViewContext['env']): AgentView {
  const { manifest } = entry;
  const model = modelNameOf(manifest);
  return {
    id: entry.id,
    name: entry.name,
    version: manifest.version,
    description: manifest.description,
    state: entry.state,
    parent: entry.parentId,
    children: [...entry.children],
    session_id: entry.sessionId,
    module: manifest.module,
    schedule: manifest.schedule.mode,
    model,
    runs_on: model ?? (defaultModel === undefined ? null : modelName(defaultModel)),
    cannot_run: cannotRunOf(manifest, { defaultModel, env }),
    tags: [...manifest.tags],
    capabilities: [...entry.capabilities],
    created_at: new Date(entry.createdAt).toISOString(),
    updated_at: new Date(entry.updatedAt).toISOString(),
  };
}

/** Builds the detailed view of a live agent. */
export function toAgentDetailView(entry: AgentEntry, defaultModel?: ModelTarget, env?: AgentViewContext['env']): AgentDetailView {
  return { ...toAgentView(entry, defaultModel, env), manifest: entry.manifest };
}
