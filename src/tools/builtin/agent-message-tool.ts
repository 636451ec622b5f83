import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';

const AgentMessageInput = z.strictObject({
  target_agent_name: z.string().min(1).describe('The name of the agent to message'),
  message: z.string().min(1).describe('What to tell it'),
});

/**
 * `agent_message {target_agent_name, message}` (spec/01): sends a message to another agent and
 * returns its reply. Needs `agent_message` for the target; chains are limited in depth.
 */
export const agentMessageTool: Tool<z.output<typeof AgentMessageInput>> = {
  name: 'agent_message',
  description: 'Send a message to another agent by name and wait for its reply.',
  inputSchema: AgentMessageInput,
  requires: (input) => [{ kind: 'agent_message', pattern: input.target_agent_name }],
  async execute(input, context) {
    const reply = await context.kernel.messageAgent(context.agent, input.target_agent_name, input.message, { signal: context.signal });
    return { text: reply.text };
  },
};
