import { readdir } from 'node:fs/promises';
import { z } from 'zod';
import type { Capability, Tool } from '../../contracts/index.ts';
import { fileErrorResult } from './file-error-result.ts';
import { ToolInputError } from './tool-input-error.ts';
import { errorCode, resolveToolPath } from './workspace-path.ts';

const FileListInputSchema = z.object({
  path: z.string().min(1).describe('The folder to list: relative to your workspace (use "." for the workspace itself), or absolute.'),
});

/**
 * `file_list {path}`: the entries of one folder, one per line, sorted by name (code unit
 * order), folders marked with a trailing `/`. A symbolic link is listed by its own name,
 * without `/`, whatever it points to. An empty folder gives `(empty folder)`;
 * `structured.entries` holds the same lines.
 *
 * `requires` asks `file_read` on the fully resolved folder (see `resolveToolPath`), and nothing
 * when it is inside the agent's real workspace, which needs no grant. Throws `ToolInputError`
 * (from `requires`) for a path it cannot resolve. A missing path or a file are error results
 * naming the path as given.
 */
export const fileListTool: Tool<{ path: string }> = {
  name: 'file_list',
  description: 'List a folder: one entry per line, folders end with "/". Relative paths are in your workspace.',
  inputSchema: FileListInputSchema,
  async requires(input, context): Promise<Capability[]> {
    const resolved = await resolveToolPath(input.path, context.agent.workspace, context.signal);
    return resolved.insideWorkspace ? [] : [{ kind: 'file_read', pattern: resolved.real }];
  },
  async execute(input, context) {
    let real: string;
    try {
      ({ real } = await resolveToolPath(input.path, context.agent.workspace, context.signal));
    } catch (error) {
      if (context.signal.aborted) {
        throw error;
      }
      return fileErrorResult('list', input.path, error instanceof ToolInputError ? error.message : error);
    }
    try {
      const entries = await readdir(real, { withFileTypes: true });
      context.signal.throwIfAborted();
      const lines = entries
        .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
        .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
      return { text: lines.length === 0 ? '(empty folder)' : lines.join('\n'), structured: { entries: lines } };
    } catch (error) {
      if (context.signal.aborted) {
        throw error;
      }
      return fileErrorResult('list', input.path, errorCode(error) === 'ENOTDIR' ? 'it is not a folder; use file_read' : error);
    }
  },
};
