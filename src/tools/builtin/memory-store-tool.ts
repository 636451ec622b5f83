import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const MemoryStoreInput = z.strictObject({
  key: z.string().min(3).describe('A scoped key: "self.<name>" for your own memory, "<agent>.<name>" for another agent\'s'),
  value: z.json().describe('Any JSON value'),
});

/**
 * `memory_store {key, value}`: keeps a value in the persistent memory. `self.*` is the calling
 * agent's own scope; `<agent>.*` another agent's. Needs `memory_write` for the key as written.
 */
export const memoryStoreTool: Tool<z.output<typeof MemoryStoreInput>> = {
  name: 'memory_store',
  // Run again on a resumed turn (decision 0045): it only stores the same value under the same key again.
  idempotent: true,
  description: 'Store a value in persistent memory under a scoped key such as "self.notes". It survives restarts.',
  inputSchema: MemoryStoreInput,
  requires: (input) => [{ kind: 'memory_write', pattern: input.key }],
  async execute(input, context) {
    await context.kernel.memoryPut(context.agent, input.key, input.value);
    return { text: `stored ${input.key}` };
  },
};
