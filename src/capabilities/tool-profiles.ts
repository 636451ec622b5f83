/**
 * Named tool profiles (spec/01 `profile`): each a set of built-in tools a manifest grants by
 * naming it, as OpenFang's `ToolProfile` does (its `agent_send` is Loom's `agent_message`; Loom
 * has no `channel_send`). A profile grants the tools only: what a tool then reaches (hosts,
 * commands, files outside the workspace) still needs its own grant in `[capabilities]`.
 */

/** The profiles, narrowest first. */
export const TOOL_PROFILES = ['minimal', 'coding', 'research', 'messaging', 'automation', 'full'] as const;

/** A profile's name. */
export type ToolProfile = (typeof TOOL_PROFILES)[number];

/** The tools each profile grants; `full`'s `"*"` is every tool. */
export const TOOL_PROFILE_TOOLS: Readonly<Record<ToolProfile, readonly string[]>> = {
  minimal: ['file_read', 'file_list'],
  coding: ['file_read', 'file_write', 'file_list', 'shell_exec', 'web_fetch'],
  research: ['web_search', 'web_fetch', 'file_read', 'file_write'],
  messaging: ['agent_message', 'agent_list', 'memory_store', 'memory_recall'],
  automation: ['file_read', 'file_write', 'file_list', 'shell_exec', 'web_fetch', 'web_search', 'agent_message', 'agent_list', 'memory_store', 'memory_recall'],
  full: ['*'],
};

/**
 * The `[capabilities].tools` entries a profile leaves out: with a profile, `tools` may only
 * narrow it, so each entry must be one of its tools (any entry under `full`). Empty when all fit.
 */
export function toolsOutsideProfile(profile: ToolProfile, tools: readonly string[]): string[] {
  const allowed = TOOL_PROFILE_TOOLS[profile];
  if (allowed.includes('*')) return [];
  return tools.filter((tool) => !allowed.includes(tool));
}
