import type { JudgeRole } from '../emergent/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import { type ModelTarget, resolveModelReference } from '../models/index.ts';

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
