import type { Capability, CapabilityKind } from './capability.ts';

/**
 * The `[capabilities]` key of the manifest that grants each capability kind: `tools = ["*"]` is
 * `tool_all`; every other `tools` entry is a `tool_invoke`. The manifest's `capabilitiesFromManifest`
 * grants by these keys (test/capabilities/manifest-words.test.ts holds the two lists together).
 * The manifest refuses the keys of `net_listen`, `ofp_*`, `econ_earn` and `econ_transfer` (nothing
 * in Loom honours them), so no manifest grants those kinds; the kinds stay for the capability
 * algebra and its messages.
 */
export const MANIFEST_KEY_BY_KIND = {
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
} as const satisfies Readonly<Record<CapabilityKind, string>>;

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
