import { randomUUID } from 'node:crypto';
import { lstat, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import type { Tool } from '../../contracts/index.ts';
import { fileErrorResult } from './file-error-result.ts';
import { requirePathCapability, resolvePathForAction } from './file-tool-path.ts';
import { errorCode } from './workspace-path.ts';

const FileWriteInputSchema = z.object({
  path: z.string().min(1).describe('The file to write: relative to your workspace, or absolute.'),
  content: z.string().describe('The whole new content of the file, as UTF-8 text.'),
});

/**
 * `file_write {path, content}`: replaces (or creates) a file with `content`, creating missing
 * parent folders. The write is atomic: the text goes to a temporary file in the same folder,
 * which is then renamed over the target, so a reader sees the old or the new file, never half
 * of one. An existing file keeps its permission bits.
 *
 * `requires` asks `file_write` on the fully resolved path (see `resolveToolPath`; for a file
 * that does not exist yet, the real path of its nearest existing ancestor plus the rest), and
 * nothing when that path is inside the agent's real workspace, which needs no grant. A link
 * pointing out of the workspace resolves outside and needs a grant. Throws `ToolInputError`
 * (from `requires`) for a path it cannot resolve.
 *
 * The result says how many bytes were written (`structured.bytes`); a folder in the way, a
 * missing permission and the like are error results naming the path as given.
 */
export const fileWriteTool: Tool<{ path: string; content: string }> = {
  name: 'file_write',
  description: 'Write a UTF-8 text file, replacing it if it exists and creating parent folders. Relative paths are in your workspace.',
  inputSchema: FileWriteInputSchema,
  requires: (input, context) => requirePathCapability('file_write', input.path, context),
  async execute(input, context) {
    const target = await resolvePathForAction('write', input.path, context);
    if ('failure' in target) return target.failure;
    const { real } = target;
    const folder = dirname(real);
    const temporary = join(folder, `.${basename(real)}.${randomUUID()}.tmp`);
    let renamed = false;
    try {
      await mkdir(folder, { recursive: true });
      const existing = await lstat(real).catch((error: unknown) => {
        if (errorCode(error) === 'ENOENT') {
          return undefined;
        }
        throw error;
      });
      if (existing?.isDirectory() === true) {
        return fileErrorResult('write', input.path, 'it is a folder');
      }
      const data = Buffer.from(input.content, 'utf8');
      await writeFile(temporary, data, { flag: 'wx', signal: context.signal, mode: existing === undefined ? 0o666 : existing.mode & 0o7777 });
      await rename(temporary, real);
      renamed = true;
      return { text: `wrote ${data.length} bytes to "${input.path}"`, structured: { bytes: data.length } };
    } catch (error) {
      if (context.signal.aborted) {
        throw error;
      }
      return fileErrorResult('write', input.path, error);
    } finally {
      if (!renamed) {
        await rm(temporary, { force: true });
      }
    }
  },
};
