import type { ModelMessage } from 'ai';
import { z } from 'zod';
import { LoomError } from '../errors/index.ts';
import { DelegateSchema } from '../manifest/index.ts';
import type { AgentModule } from './agent-module.ts';

/** The delegate's choice (spec/03 "Select Agent"). */
export const DelegateSelectionSchema = z.object({
  agent: z.string().describe('the name of the chosen agent, exactly as listed'),
  reasoning: z.string().describe('why this agent suits the request'),
});

/** The name of the tool call that records a delegation in the session. */
export const DELEGATION_RECORD_TOOL = 'delegate_to_agent';

/**
 * The delegate agent type (spec/03): select the best managed agent for the request (structured),
 * formulate a hand-over message for it, delegate (as itself, within the timeout), then analyse
 * the reply and answer. Only the delegation record (a tool call and its result) and the answer
 * go into the session.
 */
export const runDelegate: AgentModule = async (context) => {
  const { agent, message, emit } = context;
  const settings = agent.manifest.delegate ?? DelegateSchema.parse({});
  emit({ type: 'phase', phase: 'select', detail: 'Selecting the best agent…' });
  const { available, leftOut } = await context.catalog(settings.managed_agents);
  if (leftOut.length > 0) {
    emit({ type: 'phase', phase: 'catalog', detail: `left out: ${leftOut.map((entry) => `${entry.name} (${entry.reason})`).join(', ')}`, data: { leftOut } });
  }
  if (available.length === 0) {
    throw new LoomError(
      'NO_MANAGED_AGENT',
      'user',
      `delegate "${agent.name}" has no agent to hand the request to${leftOut.length === 0 ? '' : `: ${leftOut.map((entry) => `${entry.name} (${entry.reason})`).join(', ')}`}`,
    );
  }
  const names = available.map((entry) => entry.name);
  const catalog = available.map((entry) => `- ${entry.name}: ${entry.description === '' ? '(no description)' : entry.description}`).join('\n');
  const selectionSystem = `${context.system}\n\nYou route each request to the one agent best suited to it. The agents:\n${catalog}\n\nReply with JSON: {"agent": "<name, exactly as listed>", "reasoning": "<why>"}.`;
  const selectionMessages: ModelMessage[] = [...context.history, { role: 'user', content: message }];
  let choice = await context.structured('select', DelegateSelectionSchema, { system: selectionSystem, messages: selectionMessages });
  if (!names.includes(choice.agent)) {
    const retry: ModelMessage[] = [
      ...selectionMessages,
      { role: 'assistant', content: JSON.stringify(choice) },
      { role: 'user', content: `"${choice.agent}" is not one of the agents listed. Choose one of: ${names.join(', ')}.` },
    ];
    choice = await context.structured('select', DelegateSelectionSchema, { system: selectionSystem, messages: retry });
    if (!names.includes(choice.agent)) {
      throw new LoomError(
        'DELEGATE_SELECTION_INVALID',
        'third-party',
        `delegate "${agent.name}": the model chose "${choice.agent}" twice, which is not one of its agents (${names.join(', ')})`,
      );
    }
  }
  const chosen = available.find((entry) => entry.name === choice.agent);
  emit({ type: 'phase', phase: 'formulate', detail: 'Formulating the request…', data: { agent: choice.agent, reasoning: choice.reasoning } });
  const handover = await context.generate('formulate', {
    system: `${context.system}\n\nRewrite the user's request as a clear, self-contained message for the agent "${choice.agent}" (${chosen?.description === '' || chosen === undefined ? 'no description' : chosen.description}). Include every detail it needs from the conversation. Reply with the message only.`,
    messages: [...context.history, { role: 'user', content: message }],
  });
  emit({ type: 'phase', phase: 'delegate', detail: `Delegating to ${choice.agent}…`, data: { agent: choice.agent } });
  const reply = await context.delegate(choice.agent, handover, settings.delegation_timeout_seconds * 1000);
  emit({ type: 'phase', phase: 'analyze', detail: 'Analyzing the response…' });
  const toolCallId = `delegation-${context.clock.now()}`;
  const record: ModelMessage[] = [
    {
      role: 'assistant',
      content: [
        { type: 'tool-call', toolCallId, toolName: DELEGATION_RECORD_TOOL, input: { agent: choice.agent, message: handover, reasoning: choice.reasoning } },
      ],
    },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: DELEGATION_RECORD_TOOL, output: { type: 'text', value: reply } }] },
  ];
  const answer = await context.generate('analyze', {
    system: `${context.system}\n\nYou handed the user's request to "${choice.agent}"; its reply is the result of ${DELEGATION_RECORD_TOOL}. Answer the user from it, clearly and directly, without mentioning the hand-over unless it matters.`,
    messages: [...context.history, { role: 'user', content: message }, ...record],
  });
  return { text: answer, messages: [...record, { role: 'assistant', content: answer }] };
};
