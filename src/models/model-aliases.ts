import type { ModelTarget } from './resolve-model.ts';

/**
 * The model names packages may use (spec/04 writes `"model": "claude-sonnet"`), each the current
 * model of its family. `[models.aliases]` in config.toml adds names and overrides these.
 */
export const DEFAULT_MODEL_ALIASES: Readonly<Record<string, ModelTarget>> = {
  'claude-opus': { provider: 'anthropic', model: 'claude-opus-4-5' },
  'claude-sonnet': { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  'claude-haiku': { provider: 'anthropic', model: 'claude-haiku-4-5' },
  'gpt-5': { provider: 'openai', model: 'gpt-5' },
  'gpt-5-mini': { provider: 'openai', model: 'gpt-5-mini' },
  'gpt-4o': { provider: 'openai', model: 'gpt-4o' },
  'gpt-4o-mini': { provider: 'openai', model: 'gpt-4o-mini' },
};

/**
 * The model an alias names: the configured table first, then the defaults. Undefined for an
 * unknown name (a package naming it does not load).
 */
export function resolveModelAlias(name: string, configured: Readonly<Record<string, ModelTarget>>): ModelTarget | undefined {
  return Object.hasOwn(configured, name) ? configured[name] : Object.hasOwn(DEFAULT_MODEL_ALIASES, name) ? DEFAULT_MODEL_ALIASES[name] : undefined;
}

/** Every alias known, configured and default, sorted (for "expected one of" messages). */
export function knownModelAliases(configured: Readonly<Record<string, ModelTarget>>): string[] {
  return [...new Set([...Object.keys(configured), ...Object.keys(DEFAULT_MODEL_ALIASES)])].sort();
}

const PROVIDER_PREFIXES = ['anthropic', 'openai', 'groq', 'openrouter', 'ollama'] as const;

/**
 * The model a short reference names: `provider/model` (the provider's default key and URL), or
 * an alias. Undefined when it is neither.
 */
export function resolveModelReference(reference: string, configured: Readonly<Record<string, ModelTarget>>): ModelTarget | undefined {
  const slash = reference.indexOf('/');
  if (slash > 0) {
    const provider = reference.slice(0, slash);
    const model = reference.slice(slash + 1);
    return (PROVIDER_PREFIXES as readonly string[]).includes(provider) && model !== '' ? { provider: provider as ModelTarget['provider'], model } : undefined;
  }
  return resolveModelAlias(reference, configured);
}
