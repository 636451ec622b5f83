import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const AgentSpawnInput = z.strictObject({
  manifest: z.string().min(1).describe("The child agent's manifest, as TOML (or JSON) text"),
});

/**
 * `agent_spawn {manifest}`: spawns a child of the calling agent. Needs `agent_spawn`; the
 * child's capabilities must be covered by the caller's (checked in the kernel).
 */
export const agentSpawnTool: Tool<z.output<typeof AgentSpawnInput>> = {
  name: 'agent_spawn',
  description: 'Spawn a child agent from a manifest (TOML). Its capabilities must be a subset of yours. Returns the new agent id.',
  inputSchema: AgentSpawnInput,
  requires: () => [{ kind: 'agent_spawn' }],
  async execute(input, context) {
    const child = await context.kernel.spawnAgent(context.agent, input.manifest);
    return { text: `spawned ${child.name} (${child.id})`, structured: { id: child.id, name: child.name } };
  },
};
