import { lstat, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { ToolInputError } from './tool-input-error.ts';

/** How many symbolic links one resolution may follow, as Linux's `MAXSYMLINKS`. */
const MAX_SYMLINK_HOPS = 40;

/** A tool path resolved for a capability check and for the file operation itself. */
export interface ResolvedToolPath {
  /** Absolute, with `..`, `.` and every symbolic link resolved (for a path that does not exist yet, as far as it exists). */
  real: string;
  /**
   * Whether `real` is the agent's workspace or inside it, the workspace resolved the same way
   * (and, for a pinned workspace, still resolving to itself).
   */
  insideWorkspace: boolean;
}

/**
 * Resolves `inputPath` as a file tool sees it: relative to `workspace` when relative, as is
 * when absolute, then through every `..` and symbolic link the OS would follow, a dangling link
 * included. A path that does not exist yet resolves to the real path of its nearest existing
 * ancestor plus the rest. The result is what a file tool must both ask a capability for and
 * then operate on, so the two cannot differ.
 *
 * Throws `ToolInputError` for a path holding a NUL, a link loop, or a path the OS refuses to
 * resolve (no permission to search a folder on the way). Checks `signal` between steps.
 *
 * @example
 * ```ts
 * // with /ws/etc-link -> /etc
 * await resolveToolPath('etc-link/passwd', '/ws', signal); // { real: '/etc/passwd', insideWorkspace: false }
 * ```
 */
export async function resolveToolPath(
  inputPath: string,
  workspace: string,
  signal: AbortSignal,
  options: { pinned?: boolean } = {},
): Promise<ResolvedToolPath> {
  if (inputPath.includes('\0') || workspace.includes('\0')) {
    throw new ToolInputError(`cannot resolve path "${inputPath}": it contains a NUL character`);
  }
  // Joined as text, not normalised: `link/../x` must go through `link` as the OS would.
  const absolute = isAbsolute(inputPath) ? inputPath : `${workspace}${sep}${inputPath}`;
  try {
    const [real, realWorkspace] = await Promise.all([realPathOf(absolute, signal, 0), realWorkspaceOf(workspace, signal)]);
    const trusted = options.pinned !== true || !leadsElsewhere(realWorkspace, workspace);
    return { real, insideWorkspace: trusted && isInsideFolder(real, realWorkspace) };
  } catch (error) {
    if (error instanceof ToolInputError || signal.aborted) {
      throw error;
    }
    throw new ToolInputError(`cannot resolve path "${inputPath}": ${describeFileError(error)}`, { cause: error });
  }
}

/** `workspace` with every `..` and symbolic link resolved, as {@link resolveToolPath} resolves paths. */
export function realWorkspaceOf(workspace: string, signal: AbortSignal): Promise<string> {
  return realPathOf(resolve(workspace), signal, 0);
}

/**
 * Whether a pinned workspace (a child's, pinned to its real path at the spawn) now resolves to
 * `realWorkspace` elsewhere: a symbolic link was put in its path since.
 */
export function leadsElsewhere(realWorkspace: string, workspace: string): boolean {
  return realWorkspace !== resolve(workspace);
}

/** Whether the absolute normal path `path` is `folder` or inside it. */
export function isInsideFolder(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

/** A short, lower-case account of a file system error, by its code: `no such file or folder`. */
export function describeFileError(error: unknown): string {
  const code = errorCode(error);
  switch (code) {
    case 'ENOENT':
      return 'no such file or folder';
    case 'ENOTDIR':
      return 'a part of the path is not a folder';
    case 'EISDIR':
      return 'it is a folder';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ELOOP':
      return 'too many symbolic links';
    case 'ENAMETOOLONG':
      return 'the path is too long';
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EROFS':
      return 'the file system is read-only';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

/** The `code` of a Node system error, if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}

async function realPathOf(absolute: string, signal: AbortSignal, hops: number): Promise<string> {
  signal.throwIfAborted();
  try {
    return await realpath(absolute);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') {
      throw error;
    }
  }
  // Something on the way is missing. If `absolute` itself is a dangling link, follow it by
  // hand: writing through it would create its target, so the target is what is touched.
  const parent = dirname(absolute);
  if (parent === absolute) {
    return absolute;
  }
  const stats = await lstat(absolute).catch(() => undefined);
  if (stats?.isSymbolicLink() === true) {
    if (hops >= MAX_SYMLINK_HOPS) {
      throw new ToolInputError(`cannot resolve path "${absolute}": too many symbolic links`);
    }
    const target = await readlink(absolute);
    const realParent = await realPathOf(parent, signal, hops + 1);
    return realPathOf(isAbsolute(target) ? target : `${realParent}${sep}${target}`, signal, hops + 1);
  }
  // `join` normalises: a trailing `..` or `.` applies to a parent that is already real.
  const realParent = await realPathOf(parent, signal, hops);
  return join(realParent, absolute.slice(parent.length));
}
