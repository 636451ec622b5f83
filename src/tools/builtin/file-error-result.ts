import type { ToolResult } from '../../contracts/index.ts';
import { describeFileError } from './workspace-path.ts';

/**
 * The error result of a file tool: the failed action, the path as the agent gave it, and why.
 *
 * @example
 * ```ts
 * fileErrorResult('read', 'notes.txt', enoentError); // { text: 'cannot read "notes.txt": no such file or folder', isError: true }
 * ```
 */
export function fileErrorResult(action: string, givenPath: string, reason: unknown): ToolResult {
  const why = typeof reason === 'string' ? reason : describeFileError(reason);
  return { text: `cannot ${action} "${givenPath}": ${why}`, isError: true };
}
