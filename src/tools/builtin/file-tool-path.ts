import type { Capability, ToolContext, ToolResult } from '../../contracts/index.ts';
import { fileErrorResult } from './file-error-result.ts';
import { ToolInputError } from './tool-input-error.ts';
import { resolveToolPath } from './workspace-path.ts';

/**
 * What a file tool's call needs: `kind` on the fully resolved path, or nothing when the path is
 * inside the agent's real workspace (which needs no grant).
 * @throws {ToolInputError} for a path that cannot be resolved.
 */
export async function requirePathCapability(kind: 'file_read' | 'file_write', path: string, context: ToolContext): Promise<Capability[]> {
  const resolved = await resolveToolPath(path, context.agent.workspace, context.signal, { pinned: context.agent.pinnedWorkspace === true });
  return resolved.insideWorkspace ? [] : [{ kind, pattern: resolved.real }];
}

/**
 * Resolves the path a file tool acts on, the same way `requirePathCapability` judged it. A
 * path that cannot be resolved becomes an error result naming the path as given; an abort is
 * thrown on.
 */
export async function resolvePathForAction(action: string, path: string, context: ToolContext): Promise<{ real: string } | { failure: ToolResult }> {
  try {
    const { real } = await resolveToolPath(path, context.agent.workspace, context.signal);
    return { real };
  } catch (error) {
    if (context.signal.aborted) throw error;
    return { failure: fileErrorResult(action, path, error instanceof ToolInputError ? error.message : error) };
  }
}
