import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const AgentListInput = z.strictObject({});

/** `agent_list {}`: the live agents, with their state, description and tags. */
export const agentListTool: Tool<z.output<typeof AgentListInput>> = {
  name: 'agent_list',
  // Run again on a resumed turn (decision 0045): it only reads.
  idempotent: true,
  description: 'List the live agents with their state, description and tags.',
  inputSchema: AgentListInput,
  requires: () => [],
  execute(_input, context) {
    const agents = context.kernel.listAgents(context.agent);
    const lines = agents.map((agent) => `${agent.name} (${agent.state})${agent.description === '' ? '' : `: ${agent.description}`}`);
    return Promise.resolve({ text: lines.length === 0 ? 'no agents' : lines.join('\n') });
  },
};
