import { type Capability, type PatternCapabilityKind, TOOL_PROFILE_TOOLS, type ToolProfile } from '../capabilities/index.ts';
import type { ManifestCapabilities } from './schema.ts';

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
