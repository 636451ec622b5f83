import type { ManifestCapabilities } from '../manifest/index.ts';
import type { Capability, CapabilityKind, PatternCapabilityKind } from './capability.ts';
import { TOOL_PROFILE_TOOLS, type ToolProfile } from './tool-profiles.ts';

/**
 * The `[capabilities]` key of the manifest that grants each capability kind. `tools = ["*"]`
 * is `tool_all`; every other `tools` entry is a `tool_invoke`. The manifest refuses the keys of
 * `net_listen`, `ofp_*`, `econ_earn` and `econ_transfer` (nothing in Loom honours them), so no
 * manifest grants those kinds; the kinds stay for the capability algebra and its messages.
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

/**
 * The capabilities a validated `[capabilities]` block grants, one per list entry, in the order
 * of the manifest's keys. `tools = ["*"]` becomes `tool_all`; `agent_spawn` grants only when
 * `true`; `llm_max_tokens` and `econ_spend` only when set. With the manifest's `profile`, an
 * empty `tools` grants the profile's tools (see `TOOL_PROFILE_TOOLS`). Throws nothing: the block
 * has already passed `ManifestCapabilitiesSchema`.
 *
 * @example
 * ```ts
 * capabilitiesFromManifest(ManifestCapabilitiesSchema.parse({ network: ['api.openai.com'], agent_spawn: true }));
 * // [{ kind: 'net_connect', pattern: 'api.openai.com' }, { kind: 'agent_spawn' }]
 * ```
 */
export function capabilitiesFromManifest(block: ManifestCapabilities, profile?: ToolProfile): Capability[] {
  const capabilities: Capability[] = [];
  // A profile grants its tools when `tools` is empty; a `tools` list (checked at load to lie
  // within the profile) narrows it.
  const tools = profile !== undefined && block.tools.length === 0 ? TOOL_PROFILE_TOOLS[profile] : block.tools;
  const addPatterns = (kind: PatternCapabilityKind, patterns: readonly string[]): void => {
    for (const pattern of patterns) {
      capabilities.push({ kind, pattern });
    }
  };
  for (const tool of tools) {
    capabilities.push(tool === '*' ? { kind: 'tool_all' } : { kind: 'tool_invoke', pattern: tool });
  }
  addPatterns('memory_read', block.memory_read);
  addPatterns('memory_write', block.memory_write);
  addPatterns('net_connect', block.network);
  addPatterns('shell_exec', block.shell);
  if (block.agent_spawn) capabilities.push({ kind: 'agent_spawn' });
  addPatterns('agent_message', block.agent_message);
  addPatterns('agent_kill', block.agent_kill);
  addPatterns('file_read', block.file_read);
  addPatterns('file_write', block.file_write);
  addPatterns('llm_query', block.llm_query);
  if (block.llm_max_tokens !== undefined) {
    capabilities.push({ kind: 'llm_max_tokens', max_tokens: block.llm_max_tokens });
  }
  addPatterns('env_read', block.env_read);
  if (block.econ_spend !== undefined) {
    capabilities.push({ kind: 'econ_spend', max_usd: block.econ_spend });
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
