import type { Manifest } from '../manifest/index.ts';

/** The system prompt an agent's turns start from when its manifest writes none. */

/** An agent's system prompt when its `[model].system_prompt` is unset: its name and description. */
export function defaultSystemPrompt(manifest: Manifest): string {
  return `You are ${manifest.name}${manifest.description === '' ? '' : `: ${manifest.description}`}.`;
}
