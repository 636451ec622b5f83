import type { JudgeRole } from '../emergent/index.ts';
import type { EmergentSettings, Manifest } from '../manifest/index.ts';
import { type ModelTarget, resolveModelReference } from '../models/index.ts';
import type { AgentRuntime } from './agent-runtime.ts';

// The models an agent's manifest names, as targets: its fallback models and the judges of its
// forged tools. Which of them a turn calls is the message flow's to choose; a child's
// confinement checks the same ones.

/** A model as a manifest names it (a `[[fallback_models]]` entry) as a target: provider, model, key variable and URL. */
export function toTarget(model: { provider: ModelTarget['provider']; model: string; api_key_env?: string | undefined; base_url?: string | undefined }): ModelTarget {
  return { provider: model.provider, model: model.model, api_key_env: model.api_key_env, base_url: model.base_url };
}

/**
 * The model that judges an agent's forged tools in `role`: for creation its `[emergent].judge_model`,
 * for promotion (the safety and correctness judges) its `promotion_judge_model`, else its
 * `judge_model`; without one, the daemon's default model. What the kernel calls, and so what a child's confinement must check.
 */
export function judgeModelFor(settings: EmergentSettings | undefined, role: JudgeRole, runtime: { aliases?: Readonly<Record<string, ModelTarget>> | undefined; defaultModel?: ModelTarget | undefined } | undefined): ModelTarget | undefined {
  const reference = role === 'creation' ? settings?.judge_model : (settings?.promotion_judge_model ?? settings?.judge_model);
  if (reference === undefined) return runtime?.defaultModel;
  return resolveModelReference(reference, runtime?.aliases ?? {});
}

/**
 * The judge models of an agent's `[emergent]` while it is enabled (the default model when it names
 * none): models its manifest chose, like its own, so its judges may call them. With `[emergent]`
 * off there are none, as a child's confinement counts them.
 */
export function judgeModelsOf(runtime: Pick<AgentRuntime, 'aliases' | 'defaultModel'>, manifest: Manifest): ModelTarget[] {
  const emergent = manifest.emergent;
  if (emergent?.enabled !== true) return [];
  return [judgeModelFor(emergent, 'creation', runtime), judgeModelFor(emergent, 'safety', runtime)].filter((model) => model !== undefined);
}
