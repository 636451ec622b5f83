import { mkdir } from 'node:fs/promises';
import type { AgentLifecycleHook } from '../kernel/index.ts';
import { writeIdentityFiles } from './identity-files.ts';

/**
 * A lifecycle hook that creates an agent's workspace folder when it starts running (spawn,
 * resume, boot), and, for an agent with `generate_identity_files`, the identity files missing
 * from it (never over one a person kept or emptied). Workspaces are kept when an agent stops or
 * is killed: they hold the user's files.
 */
export function createWorkspaceHook(workspaceOf: (agent: { name: string; workspace: string | undefined }) => string): AgentLifecycleHook {
  return {
    name: 'workspaces',
    start: async (agent) => {
      const workspace = workspaceOf({ name: agent.name, workspace: agent.manifest.workspace });
      await mkdir(workspace, { recursive: true });
      if (agent.manifest.generate_identity_files) await writeIdentityFiles(workspace, agent.manifest);
    },
    stop: () => undefined,
  };
}
