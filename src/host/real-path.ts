import { realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * `path` (absolute, normal) with every symbolic link on the way resolved, as far as it exists:
 * the real path of its nearest existing ancestor, with the rest appended. What the file tools
 * will take the folder for while it stays as it is now (a link that dangles, or a folder not
 * made yet, stays as written).
 */
export function realPathAsFar(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realPathAsFar(parent), basename(path));
  }
}
