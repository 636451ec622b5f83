import { APICallError, type LanguageModelV4, type LanguageModelV4CallOptions, type LanguageModelV4Middleware } from '@ai-sdk/provider';
import type { ModelProvider } from './resolve-model.ts';

/**
 * Whether a provider reached through the OpenAI-compatible client is sent the JSON schema of a
 * structured reply (`response_format: json_schema`, constrained decoding) when `[model]` leaves
 * `structured_outputs` out. On for the local servers, which all take it (Ollama, vLLM, LM Studio,
 * llama.cpp); off for Groq and OpenRouter, where it depends on the model. A server that refuses it
 * is sent `json_object` instead (see {@link jsonSchemaFallback}).
 */
export const STRUCTURED_OUTPUTS_BY_DEFAULT: Readonly<Record<'groq' | 'openrouter' | 'ollama' | 'openai-compatible', boolean>> = {
  groq: false,
  openrouter: false,
  ollama: true,
  'openai-compatible': true,
};

/** Whether a call to `provider` sends the reply's schema: `[model].structured_outputs`, else the provider's default. */
export function sendsJsonSchema(provider: ModelProvider, setting: boolean | undefined): boolean {
  if (setting !== undefined) return setting;
  return provider in STRUCTURED_OUTPUTS_BY_DEFAULT ? STRUCTURED_OUTPUTS_BY_DEFAULT[provider as keyof typeof STRUCTURED_OUTPUTS_BY_DEFAULT] : false;
}

/** A call that asks for JSON of a given schema. */
function asksForSchema(params: LanguageModelV4CallOptions): boolean {
  return params.responseFormat?.type === 'json' && params.responseFormat.schema !== undefined;
}

/**
 * Whether `error` is a server refusing `response_format: json_schema`: a 400 or 422 whose message
 * speaks of the response format or schema. A 400 for another reason (a prompt too long) is not,
 * and is thrown as it is.
 */
function refusesJsonSchema(error: unknown): boolean {
  if (!APICallError.isInstance(error) || (error.statusCode !== 400 && error.statusCode !== 422)) return false;
  return /response_format|json_schema|schema|format/i.test(`${error.message} ${error.responseBody ?? ''}`);
}

/**
 * Middleware for a model sent `response_format: json_schema`: when its server refuses that, the
 * call is made again on `plain` (the same model, sent `json_object`), with a warning saying so in
 * the result, and `refused` remembers `key` so the model's later calls go to `plain` at once.
 */
export function jsonSchemaFallback(plain: LanguageModelV4, refused: Set<string>, key: string): LanguageModelV4Middleware {
  const warning = {
    type: 'other' as const,
    message: `the server of "${key}" refused response_format json_schema; sent json_object instead (set [model].structured_outputs = false to skip the try)`,
  };
  return {
    specificationVersion: 'v4',
    async wrapGenerate({ doGenerate, params }) {
      if (!asksForSchema(params)) return doGenerate();
      if (refused.has(key)) return plain.doGenerate(params);
      try {
        return await doGenerate();
      } catch (error) {
        if (!refusesJsonSchema(error)) throw error;
        refused.add(key);
        const result = await plain.doGenerate(params);
        return { ...result, warnings: [...result.warnings, warning] };
      }
    },
    async wrapStream({ doStream, params }) {
      if (!asksForSchema(params)) return doStream();
      if (refused.has(key)) return plain.doStream(params);
      try {
        return await doStream();
      } catch (error) {
        if (!refusesJsonSchema(error)) throw error;
        refused.add(key);
        return plain.doStream(params);
      }
    },
  };
}
