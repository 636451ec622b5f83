import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { PackageError } from '../errors/index.ts';
import { formatIssues, safeParseJson } from '../validation/index.ts';
import { packFolder, sha256Hex } from './archive.ts';
import { isLoopbackAddress } from '../access/index.ts';
import { installCodeFor, isInstallCode, parseInstallCode } from './install-code.ts';
import { compareSkillVersions } from './skills.ts';

/**
 * A registry is a static index: a folder, or any HTTP(S) server serving the same files (a copy
 * of the folder behind nginx, a bucket, GitHub Pages).
 *
 * ```
 * <registry>/index.json
 * <registry>/archives/<kind>/<org>/<name>-<version>.tgz      kind = agents | skills
 * ```
 *
 * `index.json`:
 *
 * ```json
 * { "format": 1,
 *   "entries": {
 *     "@nebo/agents/chief-of-staff": {
 *       "kind": "agent",
 *       "latest": "1.1.0",
 *       "versions": {
 *         "1.1.0": { "code": "AGNT-…", "archive": "archives/agents/nebo/chief-of-staff-1.1.0.tgz", "sha256": "<hex>" } } } } }
 * ```
 *
 * Each qualified name (`@org/agents/name` for packages, `@org/skills/name` for skills) maps to
 * its kind, its latest version and, per version, its install code, its archive (relative to the
 * registry) and the archive's SHA-256, checked before anything is unpacked. Versions are
 * immutable. `loom package publish` writes a registry folder; serving it is left to any static
 * file server.
 */

const NAME_PART = '[a-z0-9][a-z0-9-]*';
const VERSION_PART = '[0-9A-Za-z][0-9A-Za-z.+-]*';
const QUALIFIED = new RegExp(`^@(${NAME_PART})/(agents|skills)/(${NAME_PART})(?:@(${VERSION_PART}))?$`);
const UNVERSIONED = new RegExp(`^@${NAME_PART}/(agents|skills)/${NAME_PART}$`);
const VERSION = new RegExp(`^${VERSION_PART}$`);
const CODE = /^(AGNT|SKIL)-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;
/** Relative to the registry, below `archives/`, never climbing out of it. */
const ARCHIVE_PATH = /^archives(?:\/[A-Za-z0-9@_+-][A-Za-z0-9@._+-]*)+\.tgz$/;

/** Reading more than this from a registry is refused (a runaway server, a wrong URL). */
const MAX_INDEX_BYTES = 16 * 1024 * 1024;
const MAX_ARCHIVE_BYTES = 64 * 1024 * 1024;

const VersionEntrySchema = z.strictObject({
  code: z.string().regex(CODE, { error: 'expected an install code such as "AGNT-7QK2-M4XD"' }),
  archive: z.string().regex(ARCHIVE_PATH, { error: 'expected a path inside the registry such as "archives/agents/acme/briefing-1.0.0.tgz"' }),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, { error: 'expected 64 lowercase hex digits' }),
});

const EntrySchema = z
  .strictObject({
    kind: z.enum(['agent', 'skill']),
    latest: z.string(),
    versions: z.record(z.string(), VersionEntrySchema),
  })
  .superRefine((entry, context) => {
    for (const version of Object.keys(entry.versions)) {
      if (!VERSION.test(version)) context.addIssue({ code: 'custom', path: ['versions', version], message: 'expected a version such as "1.0.0" as the key' });
    }
    if (!Object.hasOwn(entry.versions, entry.latest))
      context.addIssue({
        code: 'custom',
        path: ['latest'],
        message: `expected one of the versions (${Object.keys(entry.versions).join(', ') || 'none'}), got ${JSON.stringify(entry.latest)}`,
      });
  });

const RegistryIndexSchema = z
  .strictObject({
    format: z.literal(1),
    entries: z.record(z.string(), EntrySchema),
  })
  .superRefine((index, context) => {
    for (const [name, entry] of Object.entries(index.entries)) {
      const plural = UNVERSIONED.exec(name)?.[1];
      if (plural === undefined) {
        context.addIssue({
          code: 'custom',
          path: ['entries', name],
          message: 'expected a qualified name such as "@acme/agents/briefing" or "@acme/skills/note-taker" as the key',
        });
        continue;
      }
      const kind = plural === 'agents' ? 'agent' : 'skill';
      if (entry.kind !== kind)
        context.addIssue({
          code: 'custom',
          path: ['entries', name, 'kind'],
          message: `expected "${kind}" for a name in /${plural}/, got ${JSON.stringify(entry.kind)}`,
        });
      for (const [version, published] of Object.entries(entry.versions)) {
        if (!published.code.startsWith(codeKind(kind)))
          context.addIssue({
            code: 'custom',
            path: ['entries', name, 'versions', version, 'code'],
            message: `expected a ${codeKind(kind)}- code for ${kind === 'agent' ? 'a package' : 'a skill'}, got ${JSON.stringify(published.code)}`,
          });
      }
    }
  });

type RegistryIndex = z.output<typeof RegistryIndexSchema>;
type VersionEntry = z.output<typeof VersionEntrySchema>;

/** A parsed `@org/agents/name[@version]` or `@org/skills/name[@version]`. */
export interface QualifiedName {
  kind: 'agent' | 'skill';
  org: string;
  name: string;
  /** Without the version: `@org/agents/name`. */
  qualified: string;
  version?: string;
}

/** What {@link publishToRegistry} wrote. */
export interface PublishedArchive {
  code: string;
  /** Relative to the registry. */
  archive: string;
  sha256: string;
}

/** What a registry resolved: the archive's bytes, their digest checked. */
export interface ResolvedArchive {
  kind: 'agent' | 'skill';
  /** The qualified name, without the version. */
  name: string;
  version: string;
  code: string;
  /** The archive's SHA-256, as the index gives it and as checked. */
  sha256: string;
  bytes: Uint8Array;
  /** The registry it came from, as given. */
  registry: string;
}

const codeKind = (kind: 'agent' | 'skill'): 'AGNT' | 'SKIL' => (kind === 'agent' ? 'AGNT' : 'SKIL');
const isUrl = (location: string): boolean => /^https?:\/\//i.test(location);
const messageOf = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  // fetch's own message is "fetch failed"; what failed is in its cause (ECONNREFUSED, a TLS error).
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
};
const EXPECTED_NAME = 'expected @org/agents/name or @org/skills/name (lowercase letters, digits and hyphens), optionally followed by @version';

/**
 * Parses a qualified name, optionally with a version.
 * @throws {PackageError} for anything but `@org/agents/name[@version]` or `@org/skills/name[@version]`.
 * @example parseQualifiedName('@nebo/skills/note-taker@1.2.0') // { kind: 'skill', org: 'nebo', name: 'note-taker', qualified: '@nebo/skills/note-taker', version: '1.2.0' }
 */
export function parseQualifiedName(text: string): QualifiedName {
  const match = QUALIFIED.exec(text);
  if (match === null) throw new PackageError(`"${text}" is not a qualified name: ${EXPECTED_NAME}`);
  const [, org = '', plural = '', name = '', version] = match;
  return { kind: plural === 'agents' ? 'agent' : 'skill', org, name, qualified: `@${org}/${plural}/${name}`, ...(version === undefined ? {} : { version }) };
}

function parseIndex(bytes: Uint8Array, registry: string): RegistryIndex {
  const cannot = `cannot read registry "${registry}": index.json`;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new PackageError(`${cannot} is not UTF-8 text`);
  }
  const json = safeParseJson(text);
  if (!json.ok) throw new PackageError(`${cannot} is not valid JSON (${json.message})`);
  const parsed = RegistryIndexSchema.safeParse(json.value, { reportInput: true });
  if (!parsed.success) {
    const problems = formatIssues(parsed.error, { style: 'json' });
    throw new PackageError(`${cannot}: ${problems.join('; ')}`, { details: { registry, problems } });
  }
  return parsed.data;
}

/** Reads at most `limit` bytes of a response's body (`url` of `registry`, named in the error). */
async function readBody(response: Response, read: { limit: number; url: URL; registry: string }): Promise<Uint8Array> {
  const { limit, url, registry } = read;
  const chunks: Uint8Array[] = [];
  let length = 0;
  if (response.body !== null) {
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      length += chunk.byteLength;
      // Leaving the loop cancels the stream.
      if (length > limit) throw new PackageError(`cannot read registry "${registry}": GET ${url.href} sent more than ${limit} bytes`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks);
}

interface ReadOptions {
  fetch: typeof fetch;
  signal?: AbortSignal | undefined;
  /** How long one request may take, its body included; {@link REGISTRY_TIMEOUT_MS} unless set. */
  timeoutMs?: number | undefined;
}

/** How registries are read: the fetch to use, a signal that cancels, the time limit of one request (default {@link REGISTRY_TIMEOUT_MS}). */
export interface RegistryReadOptions {
  fetch?: typeof fetch;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** How long one request to an HTTP registry may take, from asking to the last byte of its body. */
export const REGISTRY_TIMEOUT_MS = 30_000;

/** A time limit in words: `30 s`, `250 ms`. */
function durationOf(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** A registry URL's host, for the plain-http rule: loopback only. */
function isLoopbackHost(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || isLoopbackAddress(host);
}

/** Reads a file of a registry, a folder or a URL. A missing file is an error: the index names only what must be there. */
async function readFromRegistry(registry: string, wanted: { path: string; limit: number }, options: ReadOptions): Promise<Uint8Array> {
  const { path, limit } = wanted;
  if (isUrl(registry)) {
    const url = new URL(path, registry.endsWith('/') ? registry : `${registry}/`);
    // Packages hold code and ask for capabilities: over the network they come over TLS.
    if (url.protocol === 'http:' && !isLoopbackHost(url)) {
      throw new PackageError(`cannot read registry "${registry}": plain http is accepted only on this machine (loopback); use https`);
    }
    let response: Response;
    const timeoutMs = options.timeoutMs ?? REGISTRY_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
    // The limit covers the body too: a registry that sends its headers, then a byte a second,
    // is cut off at it, as one that never answers is.
    const tooSlow = (error: unknown): PackageError =>
      new PackageError(
        `cannot read registry "${registry}": GET ${url.href} took longer than ${durationOf(timeoutMs)}, the time limit for one request to a registry (REGISTRY_TIMEOUT_MS); check that the registry answers, or point [[registries]] at one that does`,
        {
          cause: error,
          details: { registry, url: url.href, timeoutMs },
          isRetryable: true,
        },
      );
    try {
      // Redirects are not followed: a registry is named by its URL, and a redirect could lead anywhere.
      response = await options.fetch(url, { signal, redirect: 'manual' });
    } catch (error) {
      options.signal?.throwIfAborted();
      if (timeout.aborted) throw tooSlow(error);
      throw new PackageError(`cannot read registry "${registry}": GET ${url.href} failed (${messageOf(error)})`, { cause: error, isRetryable: true });
    }
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw new PackageError(
        `cannot read registry "${registry}": GET ${url.href} answered ${response.status}, a redirect${response.headers.get('location') === null ? '' : ` to ${response.headers.get('location') ?? ''}`}; redirects are not followed, so point [[registries]] at the final URL`,
      );
    }
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined);
      throw new PackageError(
        `cannot read registry "${registry}": GET ${url.href} answered ${response.status}${response.statusText === '' ? '' : ` ${response.statusText}`}`,
        {
          details: { url: url.href, status: response.status },
          isRetryable: response.status >= 500 || response.status === 429,
        },
      );
    }
    try {
      return await readBody(response, { limit, url, registry });
    } catch (error) {
      options.signal?.throwIfAborted();
      if (timeout.aborted && !(error instanceof PackageError)) throw tooSlow(error);
      throw error;
    }
  }
  const file = join(registry, path);
  let bytes: Buffer;
  try {
    bytes = await readFile(file, options.signal === undefined ? {} : { signal: options.signal });
  } catch (error) {
    options.signal?.throwIfAborted();
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new PackageError(`cannot read registry "${registry}": ${missing ? `"${file}" does not exist` : `cannot read "${file}" (${messageOf(error)})`}`, {
      cause: error,
    });
  }
  if (bytes.byteLength > limit) throw new PackageError(`cannot read registry "${registry}": "${file}" is larger than ${limit} bytes`);
  return bytes;
}

/** Writes a file so that readers see the old contents or the new, never half of them. */
async function writeAtomically(path: string, data: string | Uint8Array): Promise<void> {
  const temporary = `${path}.${process.pid}-${randomUUID()}.tmp`;
  try {
    await writeFile(temporary, data);
    await rename(temporary, path);
  } finally {
    await rm(temporary, { force: true });
  }
}

async function readLocalIndex(registry: string): Promise<RegistryIndex> {
  let bytes: Buffer;
  try {
    bytes = await readFile(join(registry, 'index.json'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { format: 1, entries: {} };
    throw new PackageError(`cannot read registry "${registry}": cannot read index.json (${messageOf(error)})`, { cause: error });
  }
  return parseIndex(bytes, registry);
}

/**
 * Publishes a package or skill folder to a registry folder: packs it, writes its archive and
 * adds the version to index.json (the folder and the index are created when missing; `latest`
 * becomes the highest version, compared part by part as numbers). index.json is replaced
 * atomically. Versions are immutable: the same name and version with other bytes is refused,
 * with the same bytes it changes nothing and returns the same code.
 * @throws {PackageError} for a bad name or version, a name of the other kind, a registry URL
 *   (publishing writes files), a source that cannot be packed, a malformed index.json, a version
 *   published with other contents, or a code taken by another name or version. Nothing is
 *   written then.
 * @example await publishToRegistry({ registry: './registry', source: 'examples/packages/chief-of-staff', kind: 'agent', name: '@nebo/agents/chief-of-staff', version: '1.0.0' })
 */
export async function publishToRegistry(options: {
  registry: string;
  source: string;
  kind: 'agent' | 'skill';
  name: string;
  version: string;
}): Promise<PublishedArchive> {
  const { kind, version } = options;
  const parsed = parseQualifiedName(options.name);
  const label = `${parsed.qualified}@${version}`;
  const cannot = `cannot publish ${label} to "${options.registry}"`;
  if (isUrl(options.registry)) throw new PackageError(`${cannot}: publishing writes to a registry folder; publish to a folder, then serve it over HTTP`);
  if (parsed.kind !== kind)
    throw new PackageError(
      `${cannot}: "${options.name}" names ${parsed.kind === 'agent' ? 'a package' : 'a skill'}, but a ${kind === 'agent' ? 'package' : 'skill'} is being published; use @${parsed.org}/${kind === 'agent' ? 'agents' : 'skills'}/${parsed.name}`,
    );
  if (!VERSION.test(version)) throw new PackageError(`${cannot}: "${version}" is not a version such as "1.0.0"`);
  if (parsed.version !== undefined && parsed.version !== version)
    throw new PackageError(`${cannot}: the name says version ${parsed.version}; pass the name without a version`);

  const registry = resolve(options.registry);
  const bytes = await packFolder(options.source);
  const sha256 = sha256Hex(bytes);
  const index = await readLocalIndex(registry);
  const existing = index.entries[parsed.qualified]?.versions[version];
  if (existing !== undefined) {
    if (existing.sha256 === sha256) return { code: existing.code, archive: existing.archive, sha256 };
    throw new PackageError(
      `${cannot}: that version is published already with other contents (sha256 ${existing.sha256}, now ${sha256}); versions are immutable, so publish a new version`,
      {
        details: { name: parsed.qualified, version, published: existing.sha256, sha256 },
      },
    );
  }
  const code = installCodeFor(codeKind(kind), parsed.qualified, version);
  for (const [name, entry] of Object.entries(index.entries)) {
    for (const [taken, published] of Object.entries(entry.versions)) {
      if (published.code === code)
        throw new PackageError(`${cannot}: its install code ${code} is taken by ${name}@${taken} in that registry; publish it as another version`);
    }
  }

  const archive = `archives/${kind === 'agent' ? 'agents' : 'skills'}/${parsed.org}/${parsed.name}-${version}.tgz`;
  await mkdir(dirname(join(registry, archive)), { recursive: true });
  await writeAtomically(join(registry, archive), bytes);
  const entry = index.entries[parsed.qualified] ?? { kind, latest: version, versions: {} };
  const versions: Record<string, VersionEntry> = { ...entry.versions, [version]: { code, archive, sha256 } };
  const latest = Object.keys(versions).sort(compareSkillVersions).at(-1) ?? version;
  const updated: RegistryIndex = { format: 1, entries: { ...index.entries, [parsed.qualified]: { kind: entry.kind, latest, versions } } };
  await writeAtomically(join(registry, 'index.json'), `${JSON.stringify(updated, null, 2)}\n`);
  return { code, archive, sha256 };
}

type Wanted = { code: string } | QualifiedName;

function parseReference(reference: string): Wanted {
  if (isInstallCode(reference)) return { code: parseInstallCode(reference).code };
  if (reference.startsWith('@')) return parseQualifiedName(reference.trim());
  throw new PackageError(`"${reference}" is neither an install code (AGNT-XXXX-XXXX, SKIL-XXXX-XXXX) nor a qualified name: ${EXPECTED_NAME}`);
}

/** The version the reference asks for in this index, or what the index has under its name when it has not that version. */
function lookUp(
  index: RegistryIndex,
  wanted: Wanted,
): { name: string; kind: 'agent' | 'skill'; version: string; published: VersionEntry } | { near: string } | undefined {
  if ('code' in wanted) {
    for (const [name, entry] of Object.entries(index.entries)) {
      for (const [version, published] of Object.entries(entry.versions)) {
        if (published.code === wanted.code) return { name, kind: entry.kind, version, published };
      }
    }
    return undefined;
  }
  const entry = index.entries[wanted.qualified];
  if (entry === undefined) return undefined;
  const version = wanted.version ?? entry.latest;
  const published = entry.versions[version];
  if (published === undefined) return { near: `has ${wanted.qualified} in versions ${Object.keys(entry.versions).sort(compareSkillVersions).join(', ')}` };
  return { name: wanted.qualified, kind: entry.kind, version, published };
}

/**
 * Finds an install code or a qualified name (`@org/agents/name`, `@org/skills/name`, optionally
 * `@version`; without one, the latest) in the registries, in order, reads its archive and checks
 * its SHA-256 against the index. A code is parsed before any registry is asked. Registries are
 * folders or http(s) URLs, fetched with `options.fetch` (the global fetch by default); every
 * file the index names must be there.
 * @throws {PackageError} for a malformed reference; one found in none of the registries (the
 *   registries named); a registry that cannot be read (the URL and status, or the file,
 *   named), a malformed index.json (the registry and the JSON path named); or an archive whose
 *   digest does not match (the archive, the expected and the actual digest named).
 */
export async function resolveFromRegistries(registries: readonly string[], reference: string, options: RegistryReadOptions = {}): Promise<ResolvedArchive> {
  const near: string[] = [];
  const found = await lookUpInRegistries(registries, reference, { ...options, near });
  if (found !== undefined) return found;
  const wanted = parseReference(reference);
  const searched = registries.length === 0 ? '(none configured: add [[registries]] to config.toml)' : registries.map((registry) => `"${registry}"`).join(', ');
  const label = 'code' in wanted ? wanted.code : reference;
  throw new PackageError(`cannot find "${label}" in the registries searched: ${searched}${near.length === 0 ? '' : ` (${near.join('; ')})`}`, {
    details: { reference, registries: [...registries] },
  });
}

/**
 * As {@link resolveFromRegistries}, but undefined when no registry lists the reference (a
 * registry that cannot be read, a malformed index or a bad archive is still an error): what
 * the installer asks first for a skill a package does not bring, since a registry's copy is the
 * genuine one (docs/packages.md, "Where a skill comes from").
 * @throws {PackageError} as {@link resolveFromRegistries} does, except for a reference found nowhere.
 */
export function findInRegistries(registries: readonly string[], reference: string, options: RegistryReadOptions = {}): Promise<ResolvedArchive | undefined> {
  return lookUpInRegistries(registries, reference, { ...options, near: [] });
}

/** The reference's archive in the first registry that lists it; `near` collects the registries' near misses. */
async function lookUpInRegistries(
  registries: readonly string[],
  reference: string,
  options: RegistryReadOptions & { near: string[] },
): Promise<ResolvedArchive | undefined> {
  const { near } = options;
  const wanted = parseReference(reference);
  const read: ReadOptions = { fetch: options.fetch ?? fetch, signal: options.signal, timeoutMs: options.timeoutMs };
  for (const registry of registries) {
    const index = parseIndex(await readFromRegistry(registry, { path: 'index.json', limit: MAX_INDEX_BYTES }, read), registry);
    const found = lookUp(index, wanted);
    if (found === undefined) continue;
    if ('near' in found) {
      near.push(`"${registry}" ${found.near}`);
      continue;
    }
    const { name, kind, version, published } = found;
    // A code is a digest of the name and version: an index that pairs them otherwise is refused.
    const expected = installCodeFor(kind === 'agent' ? 'AGNT' : 'SKIL', name, version);
    if (published.code !== expected) {
      throw new PackageError(
        `cannot use ${name}@${version} from registry "${registry}": its index gives the install code ${published.code}, but that name and version have the code ${expected}; the index is wrong or was tampered with`,
        {
          details: { registry, name, version, code: published.code, expected },
        },
      );
    }
    const bytes = await readFromRegistry(registry, { path: published.archive, limit: MAX_ARCHIVE_BYTES }, read);
    const actual = sha256Hex(bytes);
    if (actual !== published.sha256) {
      throw new PackageError(
        `cannot use ${name}@${version} from registry "${registry}": the archive ${published.archive} does not match its digest (expected sha256 ${published.sha256}, got ${actual}); it was changed after publishing or damaged on the way, so it is refused`,
        { details: { registry, archive: published.archive, expected: published.sha256, actual } },
      );
    }
    return { kind, name, version, code: published.code, sha256: actual, bytes, registry };
  }
  return undefined;
}
