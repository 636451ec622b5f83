import type { ModelTarget } from './resolve-model.ts';

/**
 * `provider/model`, as usage records, turn results, grants (`llm_query`) and messages name a model.
 * @example modelName({ provider: 'openai', model: 'gpt-4o-mini' }) // "openai/gpt-4o-mini"
 */
export function modelName(target: Pick<ModelTarget, 'provider' | 'model'>): string {
  return `${target.provider}/${target.model}`;
}
