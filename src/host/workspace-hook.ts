import { mkdir } from 'node:fs/promises';
import type { AgentLifecycleHook } from '../kernel/index.ts';

/**
 * A lifecycle hook that creates an agent's workspace folder when it starts running (spawn,
 * resume, boot). Workspaces are kept when an agent stops or is killed: they hold the user's files.
 */
export function createWorkspaceHook(workspaceOf: (agent: { name: string; workspace: string | undefined }) => string): AgentLifecycleHook {
  return {
    name: 'workspaces',
    start: async (agent) => {
      await mkdir(workspaceOf({ name: agent.name, workspace: agent.manifest.workspace }), { recursive: true });
    },
    stop: () => undefined,
  };
}
