import type { ToolAgent } from '../contracts/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { ToolFilter } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { Caller } from './agent-runtime.ts';

/**
 * The tool policy of an agent's turn: what its stored manifest and the chain of messages that
 * reached it make the tool runner enforce.
 */

/** How the tool runner treats an agent's calls: who it is, its tool lists, its approvals and tool settings. */
export interface ToolPolicy {
  agent: ToolAgent;
  filter: ToolFilter;
  /** `[autonomous].approval_required_for`. */
  approvalRequiredFor: readonly string[];
  settings: Manifest['tools'];
}

/**
 * The tool policy of an agent in a turn reached through `chain`, read from its stored manifest:
 * the one place a manifest's exec policy, tool lists, approvals and tool settings become what
 * the tool runner enforces.
 */
export function toolPolicyOf(
  entry: Pick<AgentEntry, 'id' | 'name' | 'manifest' | 'capabilities' | 'parentId'>,
  workspace: string,
  chain: readonly string[],
): ToolPolicy {
  const { manifest } = entry;
  const policy = manifest.exec_policy;
  return {
    agent: {
      id: entry.id,
      name: entry.name,
      workspace,
      ...(entry.parentId === null ? {} : { pinnedWorkspace: true }),
      capabilities: entry.capabilities,
      execPolicy: {
        allow_shell: policy?.allow_shell ?? true,
        allow_network: policy?.allow_network ?? true,
        allow_file_write: policy?.allow_file_write ?? true,
      },
      depth: chain.length,
      chain,
      ...(manifest.emergent === undefined ? {} : { maxNestedCalls: manifest.emergent.max_nested_calls }),
    },
    filter: { allowlist: manifest.tool_allowlist, blocklist: manifest.tool_blocklist, mcpServers: manifest.mcp_servers },
    approvalRequiredFor: manifest.autonomous?.approval_required_for ?? [],
    settings: manifest.tools,
  };
}

/** The caller's chain as seen by the agent it reaches. */
export function chainOf(caller: Caller): readonly string[] {
  return caller.kind === 'agent' ? [...caller.chain, caller.agentId] : [];
}
