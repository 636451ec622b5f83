import type { ManifestCapabilities } from '../manifest/index.ts';
import type { Capability, CapabilityKind, PatternCapabilityKind } from './capability.ts';

/**
 * The `[capabilities]` key of the manifest that grants each capability kind. `tools = ["*"]`
 * is `tool_all`; every other `tools` entry is a `tool_invoke`.
 */
export const MANIFEST_KEY_BY_KIND: Readonly<Record<CapabilityKind, keyof ManifestCapabilities>> = {
  file_read: 'file_read',
  file_write: 'file_write',
  net_connect: 'network',
  net_listen: 'net_listen',
  tool_invoke: 'tools',
  tool_all: 'tools',
  llm_query: 'llm_query',
  llm_max_tokens: 'llm_max_tokens',
  agent_spawn: 'agent_spawn',
  agent_message: 'agent_message',
  agent_kill: 'agent_kill',
  memory_read: 'memory_read',
  memory_write: 'memory_write',
  shell_exec: 'shell',
  env_read: 'env_read',
  ofp_discover: 'ofp_discover',
  ofp_connect: 'ofp_connect',
  ofp_advertise: 'ofp_advertise',
  econ_spend: 'econ_spend',
  econ_earn: 'econ_earn',
  econ_transfer: 'econ_transfer',
};

/** Manifest list keys whose entries are glob patterns, with the kind each entry becomes. */
const PATTERN_KEYS = [
  ['memory_read', 'memory_read'],
  ['memory_write', 'memory_write'],
  ['network', 'net_connect'],
  ['shell', 'shell_exec'],
  ['agent_message', 'agent_message'],
  ['agent_kill', 'agent_kill'],
  ['file_read', 'file_read'],
  ['file_write', 'file_write'],
  ['llm_query', 'llm_query'],
  ['env_read', 'env_read'],
  ['ofp_connect', 'ofp_connect'],
  ['econ_transfer', 'econ_transfer'],
] as const satisfies ReadonlyArray<readonly [keyof ManifestCapabilities, PatternCapabilityKind]>;

/**
 * The capabilities a validated `[capabilities]` block grants, one per list entry, in the order
 * of the manifest's keys. `tools = ["*"]` becomes `tool_all`; `agent_spawn`, `ofp_discover`,
 * `ofp_advertise` and `econ_earn` grant only when `true`; `llm_max_tokens` and `econ_spend`
 * only when set. Throws nothing: the block has already passed `ManifestCapabilitiesSchema`.
 *
 * @example
 * ```ts
 * capabilitiesFromManifest(ManifestCapabilitiesSchema.parse({ network: ['api.openai.com'], agent_spawn: true }));
 * // [{ kind: 'net_connect', pattern: 'api.openai.com' }, { kind: 'agent_spawn' }]
 * ```
 */
export function capabilitiesFromManifest(block: ManifestCapabilities): Capability[] {
  const capabilities: Capability[] = [];
  for (const tool of block.tools) {
    capabilities.push(tool === '*' ? { kind: 'tool_all' } : { kind: 'tool_invoke', pattern: tool });
  }
  for (const [key, kind] of PATTERN_KEYS) {
    for (const pattern of block[key]) {
      capabilities.push({ kind, pattern });
    }
  }
  if (block.agent_spawn) {
    capabilities.push({ kind: 'agent_spawn' });
  }
  for (const port of block.net_listen) {
    capabilities.push({ kind: 'net_listen', port });
  }
  if (block.llm_max_tokens !== undefined) {
    capabilities.push({ kind: 'llm_max_tokens', max_tokens: block.llm_max_tokens });
  }
  if (block.ofp_discover) {
    capabilities.push({ kind: 'ofp_discover' });
  }
  if (block.ofp_advertise) {
    capabilities.push({ kind: 'ofp_advertise' });
  }
  if (block.econ_spend !== undefined) {
    capabilities.push({ kind: 'econ_spend', max_usd: block.econ_spend });
  }
  if (block.econ_earn) {
    capabilities.push({ kind: 'econ_earn' });
  }
  return capabilities;
}

/**
 * The capability in the manifest's own words, for messages: `[capabilities].network
 * "api.openai.com"`, `[capabilities].net_listen 8080`, `[capabilities].agent_spawn = true`,
 * `[capabilities].llm_max_tokens = 4000`. An `llm_max_tokens` of `Infinity` (the "no cap" that
 * `findEscalations` reports) reads `[capabilities].llm_max_tokens unset (unlimited)`.
 */
export function describeCapability(capability: Capability): string {
  return `${describeManifestKey(capability.kind)} ${describeManifestValue(capability)}`;
}

/** `[capabilities].<key>` for a kind. */
export function describeManifestKey(kind: CapabilityKind): string {
  return `[capabilities].${MANIFEST_KEY_BY_KIND[kind]}`;
}

/** The value part of `describeCapability`: `"api.openai.com"`, `8080`, `= true`, `= 4000`. */
export function describeManifestValue(capability: Capability): string {
  switch (capability.kind) {
    case 'tool_all':
      return '"*"';
    case 'net_listen':
      return String(capability.port);
    case 'llm_max_tokens':
      return Number.isFinite(capability.max_tokens) ? `= ${capability.max_tokens}` : 'unset (unlimited)';
    case 'econ_spend':
      return `= ${capability.max_usd}`;
    case 'agent_spawn':
    case 'ofp_discover':
    case 'ofp_advertise':
    case 'econ_earn':
      return '= true';
    case 'file_read':
    case 'file_write':
    case 'net_connect':
    case 'tool_invoke':
    case 'llm_query':
    case 'agent_message':
    case 'agent_kill':
    case 'memory_read':
    case 'memory_write':
    case 'shell_exec':
    case 'env_read':
    case 'ofp_connect':
    case 'econ_transfer':
      // JSON string quoting is also a valid TOML basic string, so the text can be pasted back.
      return JSON.stringify(capability.pattern);
  }
}
