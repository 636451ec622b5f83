import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const GenerateTextInput = z.strictObject({
  prompt: z.string().min(1).max(200_000).describe('What to write: the whole instruction, with any text it works on.'),
});

/**
 * `generate_text {prompt}`: one model call on the calling agent's own model (its `[model]`, its
 * `llm_query` grants), metered and counted against its quota like its turns. Returns the text;
 * as a compose step its value is `{ output: text }`, so `$prev.output` is the text.
 */
export const generateTextTool: Tool<z.output<typeof GenerateTextInput>> = {
  name: 'generate_text',
  // Run again on a resumed turn (decision 0045): it only asks a model again, nothing else.
  idempotent: true,
  description: 'Ask your own model to write text for a prompt (summarise, rewrite, classify, draft) in one call, without tools. Returns the text.',
  inputSchema: GenerateTextInput,
  requires: () => [],
  async execute(input, context) {
    const text = await context.kernel.generateText(context.agent, input.prompt, { signal: context.signal });
    return { text, structured: { output: text } };
  },
};
