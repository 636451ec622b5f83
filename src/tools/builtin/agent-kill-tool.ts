import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const AgentKillInput = z.strictObject({
  agent: z.string().min(1).describe('The name or id of the agent to kill'),
});

/** `agent_kill {agent}`: kills an agent and its descendants. Needs `agent_kill` for the target. */
export const agentKillTool: Tool<z.output<typeof AgentKillInput>> = {
  name: 'agent_kill',
  description: 'Kill an agent (and the agents it spawned). Irreversible.',
  inputSchema: AgentKillInput,
  requires: (input) => [{ kind: 'agent_kill', pattern: input.agent }],
  async execute(input, context) {
    const killed = await context.kernel.killAgent(context.agent, input.agent);
    return { text: `killed ${killed.join(', ')}` };
  },
};
