import { type AgentCard, SecurityScheme } from '@a2a-js/sdk';
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
  /**
   * Whether the API asks for keys: the card then declares the two ways a key is sent (the
   * `bearer` and `apiKey` schemes) and requires one of them. Without keys it declares none.
   */
  keyed?: boolean;
}

/** The card's name of the `Authorization: Bearer <key>` scheme. */
export const BEARER_SCHEME = 'bearer';
/** The card's name of the `X-API-Key: <key>` scheme. */
export const API_KEY_SCHEME = 'apiKey';

/** The security schemes a card of a daemon with keys declares, in the A2A 1.0 types. */
function keySchemes(): AgentCard['securitySchemes'] {
  return {
    [BEARER_SCHEME]: {
      scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'A Loom API key: "Authorization: Bearer <key>"', scheme: 'Bearer', bearerFormat: '' } },
    },
    [API_KEY_SCHEME]: {
      scheme: { $case: 'apiKeySecurityScheme', value: { description: 'A Loom API key: "X-API-Key: <key>"', location: 'header', name: 'X-API-Key' } },
    },
  };
}

/** One of the schemes, either (each requirement is an alternative). */
function keyRequirements(): AgentCard['securityRequirements'] {
  return [{ schemes: { [BEARER_SCHEME]: { list: [] } } }, { schemes: { [API_KEY_SCHEME]: { list: [] } } }];
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
    securitySchemes: options.keyed === true ? keySchemes() : {},
    securityRequirements: options.keyed === true ? keyRequirements() : [],
    defaultInputModes: [...A2A_INPUT_MODES],
    defaultOutputModes: [...A2A_OUTPUT_MODES],
    skills: skillsOf(agent),
    signatures: [],
  };
}

/**
 * The A2A 1.0 card as JSON (the 1.0 card's wire shape, ProtoJSON): a security scheme is an object
 * with one field naming its kind (`httpAuthSecurityScheme`, `apiKeySecurityScheme`), where the
 * SDK's types hold `{ scheme: { $case, value } }`. The rest is written as the SDK's types hold it.
 */
export type AgentCardJson = Omit<AgentCard, 'securitySchemes'> & { securitySchemes: Record<string, unknown> };

/** Converts a card to {@link AgentCardJson}. */
export function toCardJson(card: AgentCard): AgentCardJson {
  return { ...card, securitySchemes: Object.fromEntries(Object.entries(card.securitySchemes).map(([name, scheme]) => [name, SecurityScheme.toJSON(scheme)])) };
}

/** A security scheme in A2A 0.3's shape (OpenAPI's: `type` names the kind). */
export type LegacySecurityScheme =
  | { type: 'http'; scheme: string; description?: string; bearerFormat?: string }
  | { type: 'apiKey'; in: 'header' | 'query' | 'cookie'; name: string; description?: string };

/** 0.3's security requirements: each an alternative, naming schemes and their scopes. */
export type LegacySecurityRequirement = Record<string, string[]>;

/** The 0.3 shape of the schemes Loom declares (HTTP and API key; a card holds no others). */
function legacySchemesOf(card: AgentCard): Record<string, LegacySecurityScheme> {
  const schemes: Record<string, LegacySecurityScheme> = {};
  for (const [name, { scheme }] of Object.entries(card.securitySchemes)) {
    if (scheme?.$case === 'httpAuthSecurityScheme') {
      const { description, bearerFormat } = scheme.value;
      schemes[name] = {
        type: 'http',
        scheme: scheme.value.scheme,
        ...(description === '' ? {} : { description }),
        ...(bearerFormat === '' ? {} : { bearerFormat }),
      };
    } else if (scheme?.$case === 'apiKeySecurityScheme') {
      const { description, location } = scheme.value;
      schemes[name] = {
        type: 'apiKey',
        in: location === 'query' || location === 'cookie' ? location : 'header',
        name: scheme.value.name,
        ...(description === '' ? {} : { description }),
      };
    }
  }
  return schemes;
}

function legacyRequirementsOf(card: AgentCard): LegacySecurityRequirement[] {
  return card.securityRequirements.map((requirement) =>
    Object.fromEntries(Object.entries(requirement.schemes).map(([name, scopes]) => [name, [...scopes.list]])),
  );
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
  /** How a key is sent, when the card requires one (absent otherwise, as the SDK writes 0.3 cards). */
  securitySchemes?: Record<string, LegacySecurityScheme>;
  /** The schemes required, each an alternative (absent when none is). */
  security?: LegacySecurityRequirement[];
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
    capabilities: {
      streaming: card.capabilities?.streaming ?? false,
      pushNotifications: card.capabilities?.pushNotifications ?? false,
      stateTransitionHistory: true,
    },
    skills: card.skills.map((skill) => ({ id: skill.id, name: skill.name, description: skill.description, tags: skill.tags, examples: skill.examples })),
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    ...(Object.keys(card.securitySchemes).length === 0 ? {} : { securitySchemes: legacySchemesOf(card) }),
    ...(card.securityRequirements.length === 0 ? {} : { security: legacyRequirementsOf(card) }),
  };
}

/**
 * The card both A2A revisions read, served when a request names no `A2A-Version`: the 1.0 card
 * (`supportedInterfaces`, which 1.0 clients choose an interface from) with the 0.3 fields beside it
 * (`url`, `protocolVersion`, `preferredTransport`, `additionalInterfaces`, which 0.3 clients read
 * and 1.0 clients ignore). Where both revisions name a field the same (`capabilities`, `skills`)
 * it holds the union of both shapes.
 */
export type DualAgentCard = Omit<AgentCard, 'capabilities' | 'securitySchemes'> &
  Omit<LegacyAgentCard, 'capabilities' | 'skills' | 'securitySchemes' | 'security'> & {
    capabilities: NonNullable<AgentCard['capabilities']> & LegacyAgentCard['capabilities'];
    /** Each scheme in both shapes at once: 0.3's (`type`, `scheme`, `in`, `name`) beside 1.0's field naming its kind. */
    securitySchemes: Record<string, Record<string, unknown>>;
    /** 0.3's `security`: the same requirements as 1.0's `securityRequirements`. */
    security: LegacySecurityRequirement[];
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
    skills: card.skills.map(
      ({ inputModes, outputModes, ...skill }) =>
        ({ ...skill, ...(inputModes.length === 0 ? {} : { inputModes }), ...(outputModes.length === 0 ? {} : { outputModes }) }) as AgentCard['skills'][number],
    ),
    securitySchemes: dualSchemesOf(card),
    security: legacyRequirementsOf(card),
  };
}

/**
 * Each scheme of `card` in both revisions' shapes: a 0.3 client reads `type` and its fields, a
 * 1.0 client the field naming the kind (`httpAuthSecurityScheme`, `apiKeySecurityScheme`).
 */
function dualSchemesOf(card: AgentCard): Record<string, Record<string, unknown>> {
  const legacy = legacySchemesOf(card);
  return Object.fromEntries(
    Object.entries(card.securitySchemes).map(([name, scheme]) => [name, { ...legacy[name], ...(SecurityScheme.toJSON(scheme) as Record<string, unknown>) }]),
  );
}
