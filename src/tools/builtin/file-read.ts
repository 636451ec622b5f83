import { open } from 'node:fs/promises';
import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';
import { fileErrorResult } from './file-error-result.ts';
import { requirePathCapability, resolvePathForAction } from './file-tool-path.ts';

/** The largest file `file_read` returns: 10 MiB. */
export const MAX_READ_BYTES = 10 * 1024 * 1024;

const FileReadInputSchema = z.object({
  path: z.string().min(1).describe('The file to read: relative to your workspace, or absolute.'),
});

/**
 * `file_read {path}`: the text of one file. A relative path resolves in the agent's
 * workspace, an absolute one is taken as is.
 *
 * `requires` resolves the path fully (`..` and symbolic links, see `resolveToolPath`) and asks
 * `file_read` on the real path. The agent's own workspace needs no grant: when the real path is
 * inside the real workspace, `requires` returns nothing, so only `tool_invoke(file_read)` is
 * checked. A link inside the workspace that points out of it resolves to its target, which is
 * then outside and needs a grant. Throws `ToolInputError` (from `requires`) for a path it cannot
 * resolve.
 *
 * Error results, naming the path as given: a missing file, a folder, a file that is not a
 * regular file, one over `MAX_READ_BYTES`, or one holding a NUL byte (taken as binary).
 */
export const fileReadTool: Tool<{ path: string }> = {
  name: 'file_read',
  // Run again on a resumed turn (decision 0045): it only reads.
  idempotent: true,
  description: 'Read a UTF-8 text file (at most 10 MB). Relative paths are in your workspace.',
  inputSchema: FileReadInputSchema,
  requires: (input, context) => requirePathCapability('file_read', input.path, context),
  async execute(input, context) {
    const target = await resolvePathForAction('read', input.path, context);
    if ('failure' in target) return target.failure;
    const { real } = target;
    let handle;
    try {
      handle = await open(real, 'r');
    } catch (error) {
      return fileErrorResult('read', input.path, error);
    }
    try {
      // Stat the open file, not the path, so what is checked is what is read.
      const stats = await handle.stat();
      if (stats.isDirectory()) {
        return fileErrorResult('read', input.path, 'it is a folder; use file_list');
      }
      if (!stats.isFile()) {
        return fileErrorResult('read', input.path, 'it is not a regular file');
      }
      if (stats.size > MAX_READ_BYTES) {
        return fileErrorResult('read', input.path, `it is ${stats.size} bytes, over the ${MAX_READ_BYTES}-byte limit`);
      }
      const content = await handle.readFile({ signal: context.signal });
      if (content.length > MAX_READ_BYTES) {
        return fileErrorResult('read', input.path, `it grew past the ${MAX_READ_BYTES}-byte limit while being read`);
      }
      if (content.includes(0)) {
        return fileErrorResult('read', input.path, 'it looks binary (it contains NUL bytes); only text files can be read');
      }
      return { text: content.toString('utf8') };
    } catch (error) {
      if (context.signal.aborted) {
        throw error;
      }
      return fileErrorResult('read', input.path, error);
    } finally {
      await handle.close();
    }
  },
};
