import { createHash } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { gunzip, gzipSync } from 'node:zlib';
import type { ReadEntry } from 'tar';
import { messageOf, PackageError } from '../errors/index.ts';
import { listPackageFolder, specialEntryProblem } from './package-folder.ts';

/**
 * Packages and skills as `.tgz` archives (install from a file or a registry,
 * `loom package publish`), written and read with `tar`, npm's own.
 */

/** What {@link unpackArchive} accepts at most unless told otherwise. */
const DEFAULT_MAX_UNPACKED_BYTES = 50 * 1024 * 1024;
const DEFAULT_MAX_ARCHIVE_ENTRIES = 10_000;

/** Every entry is stamped with this time, so packing the same folder gives the same bytes. */
const FIXED_MTIME = new Date(0);
/** The tar stream around the files: a header, maybe a pax header and padding per entry. */
const TAR_OVERHEAD_PER_ENTRY = 2048;
const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

const gunzipAsync = promisify(gunzip);

/**
 * A link cache that remembers nothing: tar then stores a file with several hard links as a file
 * each time, never as a `Link` entry, which {@link unpackArchive} refuses.
 */
class ForgetfulMap<K, V> extends Map<K, V> {
  override set(): this {
    return this;
  }
}

/**
 * A gzipped tar of the folder's contents: paths relative to it, sorted, portable (no owner, no
 * device), every mtime fixed, so the same folder gives the same bytes. `node_modules` and `.git`
 * are left out at any depth.
 * @throws {PackageError} when `dir` is not a folder or holds a symbolic link or a special file.
 */
export async function packFolder(dir: string): Promise<Buffer> {
  const info = await stat(dir).catch(() => undefined);
  if (info?.isDirectory() !== true) throw new PackageError(`cannot pack "${dir}": it is not a folder`);
  const listing = await listPackageFolder(dir);
  if (!listing.ok) throw new PackageError(`cannot pack "${dir}": ${specialEntryProblem(listing.special, 'package')}`);
  const entries = listing.entries.map((entry) => entry.path);
  if (entries.length === 0) throw new PackageError(`cannot pack "${dir}": the folder is empty`);
  // The tar stream uncompressed, then gzip from node:zlib: tar's own gzip stream could fail with
  // "zlib: stream error" after its end in rare timings, as an uncaught exception.
  // tar is loaded with the first archive: a daemon that packs and installs nothing does not hold it.
  const { create } = await import('tar');
  const stream = create({ cwd: dir, portable: true, mtime: FIXED_MTIME, noDirRecurse: true, linkCache: new ForgetfulMap() }, entries);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return gzipSync(Buffer.concat(chunks));
}

/** The SHA-256 of the bytes, in lowercase hex. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The path's segments, without empty ones and `.` (`./package/a.txt` → `package`, `a.txt`). */
const segmentsOf = (path: string): string[] => path.split('/').filter((segment) => segment !== '' && segment !== '.');

/** Why an entry may not be unpacked, or undefined when it may. */
function entryProblem(entry: ReadEntry): string | undefined {
  if (!ALLOWED_TYPES.has(entry.type)) return `"${entry.path}" is a ${entry.type} entry; only files and folders may be in a package`;
  if (entry.path.startsWith('/') || /^[A-Za-z]:/.test(entry.path)) return `"${entry.path}" is an absolute path`;
  if (segmentsOf(entry.path).includes('..') || entry.path.includes('\\')) return `"${entry.path}" points outside the archive's folder`;
  return undefined;
}

/**
 * Extracts a `.tgz` (or plain tar) into `destination` (created when missing) after checking
 * every entry: only files and folders (no symbolic or hard links, no devices), no absolute
 * paths, no `..`, at most `maxEntries` entries (default 10,000) and `maxBytes` unpacked (default
 * 50 MiB). Returns the package root: the destination, or, when the archive holds exactly one
 * top-level folder and no top-level files (npm's `package/`), that folder.
 * @throws {PackageError} for a corrupt, empty or unsafe archive; nothing is extracted then.
 */
export async function unpackArchive(bytes: Uint8Array, destination: string, options: { maxBytes?: number; maxEntries?: number } = {}): Promise<string> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_UNPACKED_BYTES;
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ARCHIVE_ENTRIES;
  const refuse = (problem: string): PackageError => new PackageError(`cannot unpack the archive: ${problem}`);

  // Decompressed once, up to a bound, so a gzip bomb stops early instead of filling memory.
  let tarBytes: Buffer;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      tarBytes = await gunzipAsync(bytes, { maxOutputLength: maxBytes + (maxEntries + 1) * TAR_OVERHEAD_PER_ENTRY });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw refuse(`it unpacks to more than ${maxBytes} bytes`);
      throw refuse(`it is not a valid .tgz (${messageOf(error)})`);
    }
  } else tarBytes = Buffer.from(bytes);

  const { extract, list } = await import('tar');
  let problem: string | undefined;
  let count = 0;
  let total = 0;
  const tops = new Map<string, 'file' | 'folder'>();
  const check = (entry: ReadEntry): void => {
    entry.resume();
    if (problem !== undefined) return;
    count += 1;
    total += entry.size;
    problem = entryProblem(entry);
    if (problem === undefined && count > maxEntries) problem = `it holds more than ${maxEntries} entries`;
    if (problem === undefined && total > maxBytes) problem = `it unpacks to more than ${maxBytes} bytes`;
    const segments = segmentsOf(entry.path);
    const [top] = segments;
    if (top !== undefined && tops.get(top) !== 'file') tops.set(top, segments.length > 1 || entry.type === 'Directory' ? 'folder' : 'file');
  };
  try {
    await pipeline(Readable.from([tarBytes]), list({ strict: true, onReadEntry: check }));
  } catch (error) {
    throw refuse(`it is not a valid .tgz (${messageOf(error)})`);
  }
  if (problem !== undefined) throw refuse(problem);
  if (count === 0) throw refuse('it is empty');

  await mkdir(destination, { recursive: true });
  try {
    await pipeline(
      Readable.from([tarBytes]),
      // The filter repeats the checks above: nothing unchecked reaches the disk.
      extract({
        cwd: destination,
        strict: true,
        preservePaths: false,
        preserveOwner: false,
        filter: (_path, entry) => 'type' in entry && entryProblem(entry) === undefined,
      }),
    );
  } catch (error) {
    throw new PackageError(`cannot unpack the archive into "${destination}": ${messageOf(error)}`);
  }
  const [only, ...others] = tops;
  return only !== undefined && others.length === 0 && only[1] === 'folder' ? join(destination, only[0]) : destination;
}
