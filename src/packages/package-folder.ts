import { createHash } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PackageError } from '../errors/index.ts';

/**
 * What a package or skill folder may hold: files and folders, nothing else. Packing, loading,
 * comparing and copying a folder all list it here, so a folder is read, installed and packed
 * by one rule: a symbolic link would let a package read (and send to a model) a file outside
 * itself, and a FIFO or a device would hang or fail the copy halfway through an install.
 */

/** Left out at any depth: never part of a package, whatever they hold. */
const SKIPPED = new Set(['node_modules', '.git']);

/** One entry of a package folder, relative to it with `/`. */
export interface PackageFolderEntry {
  path: string;
  type: 'file' | 'folder';
}

/** An entry that is neither a file nor a folder, relative to the folder with `/`, and what it is ("a symbolic link"). */
export interface SpecialEntry {
  path: string;
  kind: string;
}

/** What {@link listPackageFolder} found: every entry, or the first that may not be in a package. */
export type PackageFolderListing = { ok: true; entries: PackageFolderEntry[] } | { ok: false; special: SpecialEntry };

/** What an entry is, in words, when it is neither a file nor a folder. */
function specialKind(entry: Dirent): string | undefined {
  if (entry.isFile() || entry.isDirectory()) return undefined;
  if (entry.isSymbolicLink()) return 'a symbolic link';
  if (entry.isFIFO()) return 'a FIFO (named pipe)';
  if (entry.isSocket()) return 'a socket';
  if (entry.isBlockDevice()) return 'a block device';
  if (entry.isCharacterDevice()) return 'a character device';
  return 'neither a file nor a folder';
}

const byCodeUnit = (first: string, second: string): number => (first < second ? -1 : first > second ? 1 : 0);

/**
 * The folder's files and folders, relative to it with `/`, sorted by code unit (not by locale,
 * not by disk order), `node_modules` and `.git` left out at any depth; or the first entry (in
 * that order) that is a symbolic link, a FIFO, a socket or a device. Links are never followed.
 * @throws the file system's error when `dir` cannot be read.
 */
export async function listPackageFolder(dir: string): Promise<PackageFolderListing> {
  const entries: PackageFolderEntry[] = [];
  const walk = async (relative: string): Promise<SpecialEntry | undefined> => {
    const found = (await readdir(join(dir, relative), { withFileTypes: true })).sort((first, second) => byCodeUnit(first.name, second.name));
    for (const entry of found) {
      if (SKIPPED.has(entry.name)) continue;
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      const kind = specialKind(entry);
      if (kind !== undefined) return { path, kind };
      entries.push({ path, type: entry.isDirectory() ? 'folder' : 'file' });
      if (entry.isDirectory()) {
        const special = await walk(path);
        if (special !== undefined) return special;
      }
    }
    return undefined;
  };
  const special = await walk('');
  if (special !== undefined) return { ok: false, special };
  return { ok: true, entries: entries.sort((first, second) => byCodeUnit(first.path, second.path)) };
}

/**
 * Why a folder holding `special` is refused, and the fix, for a message:
 * `"AGENT.md" is a symbolic link; a package holds only files and folders (…)`.
 */
export function specialEntryProblem(special: SpecialEntry, holder: 'package' | 'skill'): string {
  const fix = special.kind === 'a symbolic link' ? 'put a copy of what it points to in its place' : 'remove it';
  return `"${special.path}" is ${special.kind}; a ${holder} holds only files and folders (${fix})`;
}

/** The folder's entries, or a {@link PackageError} `cannot <action>: "<path>" is <kind>; …`. */
async function entriesOrFail(dir: string, holder: 'package' | 'skill', action: string): Promise<PackageFolderEntry[]> {
  const listing = await listPackageFolder(dir);
  if (!listing.ok)
    throw new PackageError(`cannot ${action}: ${specialEntryProblem(listing.special, holder)}`, { details: { folder: dir, ...listing.special } });
  return listing.entries;
}

/**
 * Copies the folder's files and folders into `to` (created), as {@link listPackageFolder} lists
 * them: `node_modules` and `.git` are left out, as `loom package publish` leaves them out. The
 * folder is listed again here, so what is copied is what was checked.
 * @throws {PackageError} when `from` holds a symbolic link, a FIFO, a socket or a device (nothing is copied then).
 */
export async function copyPackageFolder(from: string, to: string, holder: 'package' | 'skill'): Promise<void> {
  const entries = await entriesOrFail(from, holder, `copy "${from}"`);
  await mkdir(to, { recursive: true });
  // Sorted, so every folder comes before what it holds.
  for (const entry of entries) {
    if (entry.type === 'folder') await mkdir(join(to, entry.path));
    else await copyFile(join(from, entry.path), join(to, entry.path), constants.COPYFILE_EXCL);
  }
}

/**
 * SHA-256 over the folder's entries as {@link listPackageFolder} lists them: each path, whether it
 * is a folder, and each file's bytes. Two folders have the same digest when they hold the same
 * files with the same content (times and modes aside).
 * @throws {PackageError} when the folder holds a symbolic link, a FIFO, a socket or a device.
 */
export async function packageFolderDigest(dir: string, holder: 'package' | 'skill'): Promise<string> {
  const hash = createHash('sha256');
  for (const entry of await entriesOrFail(dir, holder, `read "${dir}"`)) {
    hash.update(`${entry.type} ${entry.path}\0`);
    if (entry.type === 'file')
      hash.update(
        createHash('sha256')
          .update(await readFile(join(dir, entry.path)))
          .digest('hex'),
      );
  }
  return hash.digest('hex');
}
