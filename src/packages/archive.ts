import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { create, extract, list, type ReadEntry } from 'tar';
import { PackageError } from '../errors/index.ts';

/** Packages and skills as `.tgz` archives (install from a file or a registry, `loom package publish`). */

const SKIPPED = new Set(['node_modules', '.git']);

/** Gzipped tar of the folder's contents: paths relative to it, sorted, portable, a fixed mtime (the same folder gives the same bytes). */
export async function packFolder(dir: string): Promise<Buffer> {
  const entries = (await readdir(dir)).filter((entry) => !SKIPPED.has(entry)).sort();
  const chunks: Buffer[] = [];
  const stream = create({ gzip: true, cwd: dir, portable: true, mtime: new Date(0), filter: (path) => !path.split('/').some((part) => SKIPPED.has(part)) }, entries);
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** The SHA-256 of the bytes, in hex. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Extracts an archive into `destination` after checking every entry: only files and folders,
 * no absolute paths, no `..`, at most `maxEntries` entries and `maxBytes` unpacked. Returns the
 * package root: the destination, or its one top-level folder when the archive holds only that
 * (npm's `package/`).
 * @throws {PackageError} for a corrupt or unsafe archive (nothing is extracted then).
 */
export async function unpackArchive(bytes: Uint8Array, destination: string, options: { maxBytes?: number; maxEntries?: number } = {}): Promise<string> {
  const maxBytes = options.maxBytes ?? 50 * 1024 * 1024;
  const maxEntries = options.maxEntries ?? 10_000;
  let problem: string | undefined;
  let count = 0;
  let total = 0;
  const check = (entry: ReadEntry): void => {
    count += 1;
    total += entry.size;
    const parts = entry.path.split('/');
    if (entry.type !== 'File' && entry.type !== 'OldFile' && entry.type !== 'Directory') problem ??= `"${entry.path}" is a ${entry.type} entry; only files and folders may be in a package`;
    else if (isAbsolute(entry.path) || parts.includes('..')) problem ??= `"${entry.path}" points outside the archive's folder`;
    else if (count > maxEntries) problem ??= `it holds more than ${maxEntries} entries`;
    else if (total > maxBytes) problem ??= `it unpacks to more than ${maxBytes} bytes`;
    entry.resume();
  };
  try {
    await pipeline(Readable.from([Buffer.from(bytes)]), list({ strict: true, onReadEntry: check }));
  } catch (error) {
    throw new PackageError(`cannot unpack the archive: it is not a valid .tgz (${error instanceof Error ? error.message : String(error)})`);
  }
  if (problem !== undefined) throw new PackageError(`cannot unpack the archive: ${problem}`);
  if (count === 0) throw new PackageError('cannot unpack the archive: it is empty');
  await pipeline(Readable.from([Buffer.from(bytes)]), extract({ cwd: destination, strict: true, preservePaths: false }));
  const top = await readdir(destination, { withFileTypes: true });
  const only = top[0];
  return top.length === 1 && only !== undefined && only.isDirectory() ? join(destination, only.name) : destination;
}
