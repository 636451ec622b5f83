import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const MemoryRecallInput = z.union([
  z.strictObject({ key: z.string().min(1).describe('An exact scoped key, e.g. "self.notes"') }),
  z.strictObject({ prefix: z.string().min(1).describe('A key prefix, e.g. "self." or "self.project."') }),
  z.strictObject({ query: z.string().min(1).describe('Words to look for in keys and values') }),
]);

type MemoryRecallInput = z.output<typeof MemoryRecallInput>;

/**
 * `memory_recall {key | prefix | query}`: reads persistent memory by exact key, by prefix, or by
 * a text search over keys and values. An exact key needs `memory_read` for it; prefix and text
 * searches return only the entries whose keys the agent may read.
 */
export const memoryRecallTool: Tool<MemoryRecallInput> = {
  name: 'memory_recall',
  // Run again on a resumed turn (decision 0045): it only reads.
  idempotent: true,
  description: 'Recall values from persistent memory by exact "key", by key "prefix", or by a text "query".',
  inputSchema: MemoryRecallInput,
  requires: (input) => ('key' in input ? [{ kind: 'memory_read', pattern: input.key }] : []),
  async execute(input, context) {
    const entries = await context.kernel.memoryFind(context.agent, input);
    if (entries.length === 0) return { text: 'no memory matches' };
    return {
      text: entries.map((entry) => `${entry.scope}.${entry.key} = ${JSON.stringify(entry.value)}`).join('\n'),
      structured: { entries: entries.map((entry) => ({ key: `${entry.scope}.${entry.key}`, value: entry.value })) },
    };
  },
};
