import { readdir } from 'node:fs/promises';
import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';
import { fileErrorResult } from './file-error-result.ts';
import { requirePathCapability, resolvePathForAction } from './file-tool-path.ts';
import { errorCode } from './workspace-path.ts';

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
  // Run again on a resumed turn (decision 0045): it only reads.
  idempotent: true,
  description: 'List a folder: one entry per line, folders end with "/". Relative paths are in your workspace.',
  inputSchema: FileListInputSchema,
  requires: (input, context) => requirePathCapability('file_read', input.path, context),
  async execute(input, context) {
    const target = await resolvePathForAction('list', input.path, context);
    if ('failure' in target) return target.failure;
    const { real } = target;
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
