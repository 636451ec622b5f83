import type { AgentCard } from '@a2a-js/sdk';
import type { AgentDetailView } from '../kernel/index.ts';

/** Where an agent's A2A endpoints live, relative to the server's origin and listen path. */
export interface A2aEndpoints {
  /** JSON-RPC 2.0 (A2A 1.0 and 0.3): `POST {base}/{agent}`. */
  jsonRpc: string;
  /** HTTP+JSON (A2A 1.0): `{base}/{agent}/rest/...`. */
  rest: string;
  /** HTTP+JSON (A2A 0.3): `{base}/{agent}`, under which 0.3 clients call `/v1/message:send`, `/v1/tasks/{id}`, ... */
  restV03: string;
}

/** The endpoints of `agent` on the server at `origin` under `listenPath`. */
export function endpointsOf(origin: string, listenPath: string, agent: string): A2aEndpoints {
  const base = `${origin}${listenPath === '/' ? '' : listenPath}/${encodeURIComponent(agent)}`;
  return { jsonRpc: base, rest: `${base}/rest`, restV03: base };
}

/** The A2A skills of an agent: one per tool it may use (spec/05). */
function skillsOf(agent: AgentDetailView | undefined): AgentCard['skills'] {
  if (agent === undefined) return [];
  const tools = new Set<string>();
  for (const capability of agent.capabilities) {
    if (capability.kind === 'tool_invoke') tools.add(capability.pattern);
  }
  return [...tools].map((tool) => ({
    id: tool,
    name: tool.replaceAll('_', ' '),
    description: `Can use the ${tool} tool`,
    tags: ['tool'],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }));
}

/** The media types a Loom agent takes: text, and JSON (`data` parts, given to the agent as JSON text). */
export const A2A_INPUT_MODES: readonly string[] = ['text/plain', 'application/json'];
/** The media types a Loom agent answers in. */
export const A2A_OUTPUT_MODES: readonly string[] = ['text/plain'];

/** What {@link buildAgentCard} advertises beyond the agent itself. */
export interface AgentCardOptions {
  /** Whether the server delivers push notifications (`capabilities.pushNotifications`). */
  pushNotifications?: boolean;
}

/**
 * The A2A 1.0 card of an agent (or the placeholder card when `agent` is undefined: no agents),
 * with its JSON-RPC and HTTP+JSON interfaces, in 1.0 and in 0.3.
 */
export function buildAgentCard(agent: AgentDetailView | undefined, endpoints: A2aEndpoints, options: AgentCardOptions = {}): AgentCard {
  return {
    name: agent?.name ?? 'loom',
    description: agent === undefined ? 'Loom agent OS: no agents are running yet' : agent.description || `Loom agent ${agent.name}`,
    supportedInterfaces: [
      { url: endpoints.jsonRpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: endpoints.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
      { url: endpoints.jsonRpc, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
      { url: endpoints.restV03, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    version: agent?.version ?? '0.1.0',
    capabilities: { streaming: true, pushNotifications: options.pushNotifications ?? false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: [...A2A_INPUT_MODES],
    defaultOutputModes: [...A2A_OUTPUT_MODES],
    skills: skillsOf(agent),
    signatures: [],
  };
}

/** The card in spec/05's (A2A 0.3) shape: `/.well-known/agent.json`, `/a2a/agents`, and card requests without `A2A-Version`. */
export interface LegacyAgentCard {
  name: string;
  description: string;
  url: string;
  version: string;
  protocolVersion: string;
  preferredTransport: string;
  additionalInterfaces: { url: string; transport: string }[];
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean };
  skills: { id: string; name: string; description: string; tags: string[]; examples: string[] }[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
}

/** Converts a card to spec/05's shape. */
export function toLegacyCard(card: AgentCard): LegacyAgentCard {
  const jsonRpc = card.supportedInterfaces.find((entry) => entry.protocolBinding === 'JSONRPC')?.url ?? '';
  const rest = card.supportedInterfaces.find((entry) => entry.protocolBinding === 'HTTP+JSON' && entry.protocolVersion === '0.3')?.url;
  return {
    name: card.name,
    description: card.description,
    url: jsonRpc,
    version: card.version,
    protocolVersion: '0.3.0',
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url: jsonRpc, transport: 'JSONRPC' }, ...(rest === undefined ? [] : [{ url: rest, transport: 'HTTP+JSON' }])],
    capabilities: { streaming: card.capabilities?.streaming ?? false, pushNotifications: card.capabilities?.pushNotifications ?? false, stateTransitionHistory: true },
    skills: card.skills.map((skill) => ({ id: skill.id, name: skill.name, description: skill.description, tags: skill.tags, examples: skill.examples })),
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
  };
}

/**
 * The card both A2A revisions read, served when a request names no `A2A-Version`: the 1.0 card
 * (`supportedInterfaces`, which 1.0 clients choose an interface from) with the 0.3 fields beside it
 * (`url`, `protocolVersion`, `preferredTransport`, `additionalInterfaces`, which 0.3 clients read
 * and 1.0 clients ignore). Where both revisions name a field the same (`capabilities`, `skills`)
 * it holds the union of both shapes.
 */
export type DualAgentCard = Omit<AgentCard, 'capabilities'> & Omit<LegacyAgentCard, 'capabilities' | 'skills'> & {
  capabilities: NonNullable<AgentCard['capabilities']> & LegacyAgentCard['capabilities'];
  /** 0.3's `security` (the same requirements as 1.0's `securityRequirements`: none). */
  security: [];
};

/** Converts a 1.0 card to the {@link DualAgentCard} (a 0.3 client sees its 0.3 fields, a 1.0 client its 1.0 fields). */
export function toDualCard(card: AgentCard): DualAgentCard {
  const legacy = toLegacyCard(card);
  return {
    ...card,
    url: legacy.url,
    protocolVersion: legacy.protocolVersion,
    preferredTransport: legacy.preferredTransport,
    additionalInterfaces: legacy.additionalInterfaces,
    capabilities: { ...legacy.capabilities, extensions: card.capabilities?.extensions ?? [] },
    // An empty list of a skill's modes means "the agent's defaults" in 1.0, but may read as "none" to a 0.3 client: left out.
    skills: card.skills.map(({ inputModes, outputModes, ...skill }) => ({ ...skill, ...(inputModes.length === 0 ? {} : { inputModes }), ...(outputModes.length === 0 ? {} : { outputModes }) }) as AgentCard['skills'][number]),
    security: [],
  };
}
