import type { LanguageModelV4 } from '@ai-sdk/provider';
import type { MODEL_PROVIDERS } from '../manifest/index.ts';
import { MissingApiKeyError } from './errors/missing-api-key-error.ts';
import { ModelConfigError } from './errors/model-config-error.ts';
import { modelName } from './model-name.ts';
import { localModelMiddleware } from './local-model-middleware.ts';
import { jsonSchemaFallback, sendsJsonSchema } from './structured-outputs.ts';

/** A provider name, as the manifest spells it. */
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/**
 * What the resolver needs to build a model: the `[model]` and `[[fallback_models]]` fields of a
 * manifest (extra fields such as `max_tokens` are accepted and ignored).
 */
export interface ModelTarget {
  provider: ModelProvider;
  model: string;
  api_key_env?: string | undefined;
  base_url?: string | undefined;
  /** Whether a structured reply sends its JSON schema (`[model].structured_outputs`); the provider's default when left out. */
  structured_outputs?: boolean | undefined;
}

/** The fetch function a provider uses; injectable so tests and proxies can intercept calls. */
export type ModelFetch = typeof globalThis.fetch;

/** Options of {@link createModelResolver}. */
export interface ModelResolverOptions {
  /** The environment to read API keys from. Injected: the resolver never reads `process.env`. */
  env: Readonly<Record<string, string | undefined>>;
  /** The fetch providers call; defaults to the global one. */
  fetch?: ModelFetch;
}

/** Turns a model configuration into an AI SDK language model. */
export interface ModelResolver {
  /**
   * The AI SDK model for `target`. No request is made.
   *
   * @throws {MissingApiKeyError} when the provider needs a key and its variable is unset or empty.
   * @throws {ModelConfigError} for `openai-compatible` without `base_url`, or an unknown provider.
   */
  resolve(target: ModelTarget): LanguageModelV4;
}

/** The key variable each provider reads when `api_key_env` is not given; `null` when no key is needed. */
export const DEFAULT_API_KEY_ENV: Readonly<Record<ModelProvider, string | null>> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  groq: 'GROQ_API_KEY',
  openrouter: 'OPENROUTER_API_KEY',
  ollama: null,
  'openai-compatible': null,
};

/** Base URLs of the providers reached through the OpenAI-compatible client. */
export const DEFAULT_BASE_URLS = {
  groq: 'https://api.groq.com/openai/v1',
  openrouter: 'https://openrouter.ai/api/v1',
  ollama: 'http://127.0.0.1:11434/v1',
} as const;

/** Where the Anthropic and OpenAI SDKs send requests when no `base_url` is given. */
const SDK_BASE_URLS = {
  anthropic: 'https://api.anthropic.com/v1',
  openai: 'https://api.openai.com/v1',
} as const;

/** Where a model call goes and which key it carries: what a model setting empowers. */
export interface ModelEndpoint {
  /** The environment variable whose value is sent as the key; `null` when none is sent. */
  keyVariable: string | null;
  /** The base URL requests go to (`base_url`, or the provider's default). */
  baseUrl: string;
}

/**
 * The key variable and base URL a call to `target` uses, as {@link createModelResolver} picks
 * them. A keyless provider (`ollama`, `openai-compatible`) without `api_key_env` sends none.
 * `openai-compatible` without `base_url` (refused by the manifest schema) has an empty URL.
 */
export function modelEndpoint(target: ModelTarget): ModelEndpoint {
  const keyVariable = target.api_key_env ?? DEFAULT_API_KEY_ENV[target.provider];
  const providerUrl =
    target.provider === 'anthropic' || target.provider === 'openai'
      ? SDK_BASE_URLS[target.provider]
      : target.provider === 'openai-compatible'
        ? ''
        : DEFAULT_BASE_URLS[target.provider];
  return { keyVariable, baseUrl: target.base_url ?? providerUrl };
}

/**
 * A model whose provider client is loaded on its first call: a daemon whose agents are idle
 * never loads the provider SDKs. Configuration errors (a missing key) are still raised at once,
 * by `resolve`.
 */
function lazyModel(provider: string, modelId: string, load: () => Promise<LanguageModelV4>): LanguageModelV4 {
  let loaded: Promise<LanguageModelV4> | undefined;
  const model = (): Promise<LanguageModelV4> => (loaded ??= load());
  return {
    specificationVersion: 'v4',
    provider,
    modelId,
    get supportedUrls() {
      return model().then((inner) => inner.supportedUrls);
    },
    doGenerate: async (options) => (await model()).doGenerate(options),
    doStream: async (options) => (await model()).doStream(options),
  };
}

/**
 * A resolver of model configurations to AI SDK models, for `anthropic`, `openai`, `groq`,
 * `openrouter`, `ollama` and `openai-compatible`. `base_url` overrides any provider's URL;
 * `api_key_env` overrides the default key variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`,
 * `GROQ_API_KEY`, `OPENROUTER_API_KEY`). `ollama` and `openai-compatible` need no key, but use one
 * when `api_key_env` names a variable.
 *
 * OpenAI models use the Chat Completions API (`provider.chat`), the API every OpenAI-compatible
 * server speaks, so one wire format serves OpenAI, Groq, OpenRouter, Ollama and vLLM alike.
 *
 * Call sites should pass `maxRetries: 0` to `generateText`/`streamText`: retries belong to
 * `callWithFallback`, which honours `retry-after` on an injected clock.
 *
 * @example
 * const resolver = createModelResolver({ env: process.env });
 * const model = resolver.resolve({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
 */
export function createModelResolver(options: ModelResolverOptions): ModelResolver {
  const { env } = options;
  const fetchOption = options.fetch === undefined ? {} : { fetch: options.fetch };

  const apiKey = (target: ModelTarget): string | undefined => {
    const variable = target.api_key_env ?? DEFAULT_API_KEY_ENV[target.provider];
    if (variable === null) return undefined;
    const value = env[variable];
    if (value !== undefined && value.trim() !== '') return value;
    // A key variable named explicitly for a keyless provider is still optional: local servers
    // often accept any key, and refusing to start would be worse than sending none.
    if (DEFAULT_API_KEY_ENV[target.provider] === null) return undefined;
    throw new MissingApiKeyError(modelName(target), variable);
  };

  // The models whose servers refused a JSON schema, by name and URL: their later calls send json_object at once.
  const refusedJsonSchema = new Set<string>();

  const compatible = (target: ModelTarget, name: string, baseURL: string): LanguageModelV4 => {
    const key = apiKey(target);
    return lazyModel(`${name}.chat`, target.model, async () => {
      const [{ createOpenAICompatible }, { wrapLanguageModel }] = await Promise.all([import('@ai-sdk/openai-compatible'), import('ai')]);
      const settings = { name, baseURL, includeUsage: true, ...(key === undefined ? {} : { apiKey: key }), ...fetchOption };
      const plain = createOpenAICompatible(settings).chatModel(target.model);
      // Local models write tool calls as text and answer empty more often than hosted ones: both are handled here.
      const middleware = [localModelMiddleware(modelName(target))];
      if (!sendsJsonSchema(target.provider, target.structured_outputs)) return wrapLanguageModel({ model: plain, middleware });
      const structured = createOpenAICompatible({ ...settings, supportsStructuredOutputs: true }).chatModel(target.model);
      return wrapLanguageModel({
        model: structured,
        middleware: [...middleware, jsonSchemaFallback(plain, refusedJsonSchema, `${modelName(target)} at ${baseURL}`)],
      });
    });
  };

  return {
    resolve(target) {
      switch (target.provider) {
        case 'anthropic': {
          const key = apiKey(target);
          return lazyModel('anthropic.messages', target.model, async () => {
            const { createAnthropic } = await import('@ai-sdk/anthropic');
            return createAnthropic({
              ...(key === undefined ? {} : { apiKey: key }),
              ...(target.base_url === undefined ? {} : { baseURL: target.base_url }),
              ...fetchOption,
            }).messages(target.model);
          });
        }
        case 'openai': {
          const key = apiKey(target);
          return lazyModel('openai.chat', target.model, async () => {
            const { createOpenAI } = await import('@ai-sdk/openai');
            return createOpenAI({
              ...(key === undefined ? {} : { apiKey: key }),
              ...(target.base_url === undefined ? {} : { baseURL: target.base_url }),
              ...fetchOption,
            }).chat(target.model);
          });
        }
        case 'groq':
        case 'openrouter':
        case 'ollama':
          return compatible(target, target.provider, target.base_url ?? DEFAULT_BASE_URLS[target.provider]);
        case 'openai-compatible':
          if (target.base_url === undefined) {
            throw new ModelConfigError(
              `cannot use model "openai-compatible/${target.model}": base_url is required (the server's URL, e.g. "http://127.0.0.1:8000/v1")`,
              { details: { provider: target.provider, model: target.model } },
            );
          }
          return compatible(target, 'openai-compatible', target.base_url);
        default: {
          const provider: string = target.provider;
          throw new ModelConfigError(`cannot use model "${provider}/${target.model}": unknown provider "${provider}"`, {
            details: { provider, model: target.model },
          });
        }
      }
    },
  };
}
