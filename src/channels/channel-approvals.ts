/**
 * Tool calls waiting for approval, on a channel: the request put to the conversation (buttons for
 * the approvers where the platform has them, else how to answer), and a person's decision on it,
 * taken from the channel's approvers only and judged by the kernel.
 */
import type { ChannelConfig } from '../config/index.ts';
import { AccessDeniedError } from '../errors/index.ts';
import { kernelAs } from '../kernel/index.ts';
import type { Choice } from './channel-adapter.ts';
import { auditRefused, type ChannelContext, channelPrincipal, type ChannelUser } from './channel-context.ts';
import { deliver, reply, type ReplyWay } from './channel-delivery.ts';

/** How much of a tool call's input an approval request shows. */
const SHOWN_INPUT_CHARS = 300;

/** A tool call that waits for approval, as the agent's turn reports it. */
export interface ApprovalAsk {
  approvalId: string;
  toolName: string;
  input: unknown;
  reason?: string;
}

/** A person's decision: `approve` or `deny`, and the request's id or its first characters. */
export interface ApprovalDecision {
  user: ChannelUser;
  verb: string;
  reference: string;
}

/** An approval's input when it is a question (an MCP server's elicitation): its message and its fields, named. */
function questionOf(input: unknown): { message: string; fields: string } | undefined {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const { message, requestedSchema } = input as { message?: unknown; requestedSchema?: { properties?: Record<string, unknown>; required?: string[] } };
  if (typeof message !== 'string' || requestedSchema === undefined) return undefined;
  const required = new Set(requestedSchema.required ?? []);
  const fields = Object.keys(requestedSchema.properties ?? {}).map((key) => (required.has(key) ? `${key} (required)` : key));
  return { message, fields: fields.join(', ') || 'none' };
}

/** Asks the conversation about a tool call that waits for approval: buttons for the approvers where the platform has them, else how to answer. */
export async function askApproval(context: ChannelContext, way: ReplyWay, request: ApprovalAsk): Promise<void> {
  const { config, adapter, target } = way;
  const short = request.approvalId.slice(0, 8);
  const asked = questionOf(request.input);
  // `hint`: how to answer where there are approvers but no buttons; `unattended`: what follows where there are none.
  let ask: { text: string; choices: Choice[]; hint: string; unattended: string };
  if (asked !== undefined) {
    // A question an MCP server asks: its form is answered in the dashboard or the CLI (as its
    // text says); here it can be declined.
    ask = {
      text: `${request.toolName} asks, for ${config.agent}: ${asked.message}\nFields: ${asked.fields}.\nAnswer it on the dashboard's Approvals page or with: loom approvals approve ${short} --answer field=value`,
      choices: [{ label: 'Decline', data: `deny:${request.approvalId}` }],
      hint: `\nReply "deny ${short}" to decline it.`,
      unattended: '',
    };
  } else {
    const input = JSON.stringify(request.input) ?? '';
    const shown = input.length > SHOWN_INPUT_CHARS ? `${input.slice(0, SHOWN_INPUT_CHARS)}…` : input;
    ask = {
      text: `${config.agent} wants to run ${request.toolName} ${shown}${request.reason === undefined ? '' : `\n(${request.reason})`}`,
      choices: [
        { label: 'Approve', data: `approve:${request.approvalId}` },
        { label: 'Deny', data: `deny:${request.approvalId}` },
      ],
      hint: `\nReply "approve ${short}" or "deny ${short}".`,
      unattended: `\nIt waits for the owner's approval: loom approvals approve ${short}`,
    };
  }
  const sendChoices = adapter.sendChoices?.bind(adapter);
  if (config.policy.approvers.length === 0) await reply(context, way, `${ask.text}${ask.unattended}`);
  else if (sendChoices !== undefined) await deliver(context, config.name, () => sendChoices(target, ask.text, ask.choices));
  else await reply(context, way, `${ask.text}${ask.hint}`);
}

/**
 * A person's decision on an approval, from a button or the reply command: taken only from the
 * channel's `approvers`, and only on the channel's own agent's requests (an approver of one
 * agent's channel decides nothing of another's, whatever id they give); the decision is the
 * kernel's, recorded as by `<channel>:<user id>`. Returns what to tell them.
 */
export async function decideApproval(context: ChannelContext, config: ChannelConfig, decision: ApprovalDecision): Promise<string> {
  const { user, verb, reference } = decision;
  const approved = verb.toLowerCase() === 'approve';
  const caller = kernelAs(context.options.kernel, channelPrincipal(config, user.id));
  const refused = async (): Promise<string> => {
    await auditRefused(context, { config, user, reason: "an approval decision from someone not in the channel's approvers" });
    return 'Only the approvers of this channel may decide that.';
  };
  // The kernel judges (a channel's approvers decide its agent's requests): asked before the id is looked up, so a stranger learns nothing of it.
  if (!caller.may(approved ? 'approve tool calls' : 'deny tool calls', config.agent)) return refused();
  // The waiting requests of the agents the person reaches: the channel's agent's.
  const pending = (await caller.approvals('pending')).filter((approval) => approval.id.startsWith(reference.toLowerCase()));
  const [approval] = pending;
  if (approval === undefined || pending.length > 1)
    return pending.length > 1 ? `"${reference}" names more than one request; give more of its id.` : 'That request is no longer waiting.';
  try {
    await caller.decide(approval.id, { approved, reason: null });
  } catch (error) {
    if (error instanceof AccessDeniedError) return refused();
    return `It could not be decided: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (questionOf(approval.input) !== undefined) return approved ? `Answered: ${approval.tool}.` : `Declined: ${approval.tool} gets no answer.`;
  return approved ? `Approved: ${approval.tool} runs.` : `Denied: ${approval.tool} does not run.`;
}
