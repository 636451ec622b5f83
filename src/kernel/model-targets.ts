import type { JudgeRole } from '../forged-tools/index.ts';
import { type EmergentSettings, type Manifest, namedModel } from '../manifest/index.ts';
import { type ModelTarget, type ModelTier, resolveModelReference } from '../models/index.ts';

// The models an agent's manifest names, as targets: its primary and fallback models, its routed
// tiers and the judges of its forged tools. Which of them a turn calls is the message flow's to
// choose; a child's confinement checks the same ones.

/** A model as a manifest names it (a `[[fallback_models]]` entry) as a target: provider, model, key variable and URL. */
export function toTarget(model: {
  provider: ModelTarget['provider'];
  model: string;
  api_key_env?: string | undefined;
  base_url?: string | undefined;
  structured_outputs?: boolean | undefined;
}): ModelTarget {
  return {
    provider: model.provider,
    model: model.model,
    api_key_env: model.api_key_env,
    base_url: model.base_url,
    ...(model.structured_outputs === undefined ? {} : { structured_outputs: model.structured_outputs }),
  };
}

/**
 * The model that judges an agent's forged tools in `role`: for creation its `[emergent].judge_model`,
 * for promotion (the safety and correctness judges) its `promotion_judge_model`, else its
 * `judge_model`; without one, the daemon's default model. What the kernel calls, and so what a child's confinement must check.
 */
export function judgeModelFor(
  settings: EmergentSettings | undefined,
  role: JudgeRole,
  runtime: { aliases?: Readonly<Record<string, ModelTarget>> | undefined; defaultModel?: ModelTarget | undefined } | undefined,
): ModelTarget | undefined {
  const reference = role === 'creation' ? settings?.judge_model : (settings?.promotion_judge_model ?? settings?.judge_model);
  if (reference === undefined) return runtime?.defaultModel;
  return resolveModelReference(reference, runtime?.aliases ?? {});
}

/** What a manifest's models are resolved with: the daemon's default model, routing tiers and aliases. */
export interface ModelSources {
  defaultModel?: ModelTarget | undefined;
  tiers?: Partial<Record<ModelTier, ModelTarget | undefined>> | undefined;
  aliases?: Readonly<Record<string, ModelTarget>> | undefined;
}

/** A model an agent may call, with where its manifest chose it. */
export interface NamedModel {
  field: string;
  target: ModelTarget;
}

/**
 * The models a turn tries in order, unrouted: the primary (or the default model), then the
 * fallbacks. The first entries of {@link manifestModels}.
 */
export function fallbackChain(manifest: Manifest, sources: Pick<ModelSources, 'defaultModel'>): NamedModel[] {
  const models: NamedModel[] = [];
  const named = namedModel(manifest.model);
  const primary = named ?? sources.defaultModel;
  if (primary !== undefined)
    models.push({
      field: named !== undefined ? '[model]' : manifest.model === undefined ? 'the default model (no [model])' : 'the default model ([model] names none)',
      target: primary,
    });
  manifest.fallback_models.forEach((model, index) => models.push({ field: `[[fallback_models]][${index}]`, target: toTarget(model) }));
  return models;
}

/**
 * Every model a manifest may have called: its primary (or the default model), fallbacks, its
 * scheduled wake-ups' `[schedule].model`, the tiers it is routed over while `[routing]` is on, and the judges of its forged tools while
 * `[emergent]` is on (the default model when it names none). The one list of what an agent's
 * manifest chose: a task may run on any of them, and a child's may not go beyond its parent's.
 */
export function manifestModels(manifest: Manifest, sources: ModelSources): NamedModel[] {
  const models = fallbackChain(manifest, sources);
  if (manifest.routing?.enabled === true) {
    for (const [tier, target] of Object.entries(sources.tiers ?? {})) {
      if (target !== undefined) models.push({ field: `[routing] tier "${tier}"`, target });
    }
  }
  if (manifest.schedule.model !== undefined) models.push({ field: '[schedule].model', target: toTarget(manifest.schedule.model) });
  if (manifest.emergent?.enabled === true) {
    const creation = judgeModelFor(manifest.emergent, 'creation', sources);
    if (creation !== undefined)
      models.push({
        field: manifest.emergent.judge_model === undefined ? "the default model as [emergent]'s judge (no judge_model)" : '[emergent].judge_model',
        target: creation,
      });
    // Without its own, the promotion judge is the creation judge, listed above.
    const promotion = manifest.emergent.promotion_judge_model === undefined ? undefined : judgeModelFor(manifest.emergent, 'safety', sources);
    if (promotion !== undefined) models.push({ field: '[emergent].promotion_judge_model', target: promotion });
  }
  return models;
}
