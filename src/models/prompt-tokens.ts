import type { LanguageModelV4CallOptions, LanguageModelV4Prompt } from '@ai-sdk/provider';

/** Characters per token, for the estimate of a prompt (the same rough rule the context window cut uses). */
export const CHARS_PER_TOKEN = 4;

const sized = (value: unknown): number => (typeof value === 'string' ? value.length : value === undefined ? 0 : (JSON.stringify(value)?.length ?? 0));

/** A rough count of the tokens a prompt sends: its text, tool inputs and results. */
export function estimatePromptTokens(prompt: LanguageModelV4Prompt): number {
  let characters = 0;
  for (const message of prompt) {
    if (typeof message.content === 'string') {
      characters += message.content.length;
      continue;
    }
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning') characters += part.text.length;
      else if (part.type === 'tool-call') characters += sized(part.input);
      else if (part.type === 'tool-result')
        characters += sized(part.output.type === 'text' || part.output.type === 'error-text' ? part.output.value : part.output);
    }
  }
  return Math.ceil(characters / CHARS_PER_TOKEN);
}

/**
 * A rough count of the input tokens a model call sends: its prompt and the tools it offers
 * (their descriptions and schemas). What a call cut off before it reported usage is counted at:
 * the provider had read all of it.
 */
export function estimateCallInputTokens(options: Pick<LanguageModelV4CallOptions, 'prompt' | 'tools'>): number {
  const tools = (options.tools ?? []).reduce((total, tool) => total + sized(tool), 0);
  return estimatePromptTokens(options.prompt) + Math.ceil(tools / CHARS_PER_TOKEN);
}

/** A rough count of the tokens of `characters` of output. */
export function estimateOutputTokens(characters: number): number {
  return Math.ceil(characters / CHARS_PER_TOKEN);
}
