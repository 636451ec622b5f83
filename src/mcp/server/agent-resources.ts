import { type ReadResourceResult, type Resource, type ResourceTemplateType, ResourceNotFoundError, UriTemplate } from '@modelcontextprotocol/server';
import type { Principal } from '../../access/index.ts';
import type { AgentDirectory, AgentSummary } from './agent-tools.ts';
import { type AgentSessionView, toLastTurnView } from './last-turn-view.ts';

/** The URI template of the caller's session of an agent: its messages as JSON. */
export const AGENT_SESSION_URI_TEMPLATE = 'loom://agents/{name}/session';

/** The URI template of an agent's last turn: its messages, tool calls, outcome and usage as JSON. */
export const AGENT_LAST_TURN_URI_TEMPLATE = 'loom://agents/{name}/turns/last';

const JSON_MEDIA_TYPE = 'application/json';

/** One kind of resource every reachable agent has: where it is, how it is described, what it reads as. */
interface AgentResourceKind {
  /** The name of the kind, and the last part of each resource's name (`{agent}/{suffix}`). */
  suffix: string;
  template: UriTemplate;
  title: string;
  description: string;
  describe(agent: string): string;
  view(session: AgentSessionView): unknown;
}

const KINDS: readonly AgentResourceKind[] = [
  {
    suffix: 'session',
    template: new UriTemplate(AGENT_SESSION_URI_TEMPLATE),
    title: 'Loom agent session',
    description:
      "The caller's session of a Loom agent as JSON (this MCP client session's own; a stateless request's, the key's own; the owner's, the agent's main session): { agent, session_id, messages, running }. messages are the conversation's model messages as stored (AI SDK shape; Loom's metadata under providerOptions.loom); running is the turn not yet committed, or null.",
    describe: (agent) => `Your session of the Loom agent "${agent}" as JSON: its messages as stored, and the turn running now, if any.`,
    view: (session) => session,
  },
  {
    suffix: 'turns/last',
    template: new UriTemplate(AGENT_LAST_TURN_URI_TEMPLATE),
    title: 'Loom agent last turn',
    description:
      "A Loom agent's last turn as JSON: { agent, session_id, turn, running }. turn has the person's message, the reply text, status and reason, usage, cost_usd, model, tool_calls (input, output, is_error, duration_ms), the trace and the turn's messages; null before the first turn.",
    describe: (agent) => `The last turn of the Loom agent "${agent}" as JSON: what was asked, the reply, tool calls, how it ended, tokens and cost.`,
    view: (session) => toLastTurnView(session),
  },
];

/** The agent resource templates, for `resources/templates/list`. */
export function agentResourceTemplates(): ResourceTemplateType[] {
  return KINDS.map((kind) => ({
    uriTemplate: kind.template.toString(),
    name: `agent-${kind.suffix.replace('/', '-')}`,
    title: kind.title,
    description: kind.description,
    mimeType: JSON_MEDIA_TYPE,
  }));
}

/** The resources of `agents` (the ones a caller may reach), for `resources/list`: each agent's session and last turn. */
export function agentResources(agents: readonly AgentSummary[]): Resource[] {
  return agents.flatMap((agent) =>
    KINDS.map((kind) => ({
      uri: kind.template.expand({ name: agent.name }),
      name: `${agent.name}/${kind.suffix}`,
      title: `${agent.name}: ${kind.suffix === 'session' ? 'session' : 'last turn'}`,
      description: kind.describe(agent.name),
      mimeType: JSON_MEDIA_TYPE,
    })),
  );
}

/**
 * Reads one agent resource for `principal`: its own session of the agent, or its `thread`'s (the
 * client session's).
 * @throws {ResourceNotFoundError} when `uri` names no agent resource, no live agent, or an agent
 *   out of the principal's reach: one answer for all three, so a caller cannot probe for names
 *   (on the wire `-32602` with `data.uri`, as the 2026-07-28 revision requires; see docs/mcp-server.md).
 */
export async function readAgentResource(
  directory: AgentDirectory,
  principal: Principal,
  uri: string,
  signal?: AbortSignal,
  thread?: string,
): Promise<ReadResourceResult> {
  for (const kind of KINDS) {
    const name = kind.template.match(uri)?.['name'];
    if (typeof name !== 'string') continue;
    const session = await directory.session(name, principal, signal, thread);
    if (session === undefined) break;
    return { contents: [{ uri, mimeType: JSON_MEDIA_TYPE, text: JSON.stringify(kind.view(session), null, 2) }] };
  }
  throw new ResourceNotFoundError(
    uri,
    `Resource not found: ${uri} (Loom serves loom://agents/{name}/session and loom://agents/{name}/turns/last for the agents this caller may reach; list the resources to see them)`,
  );
}
