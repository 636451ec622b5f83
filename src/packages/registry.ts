import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { PackageError } from '../errors/index.ts';
import { formatIssues } from '../validation/index.ts';
import { packFolder, sha256Hex } from './archive.ts';
import { installCodeFor, isInstallCode, parseInstallCode } from './install-code.ts';
import { compareSkillVersions } from './skills.ts';

/**
 * A registry is a static index: a folder, or any HTTP(S) server serving the same files.
 *
 * ```
 * <registry>/index.json
 * <registry>/archives/<agents|skills>/<org>/<name>-<version>.tgz
 * ```
 *
 * `index.json` maps each qualified name (`@org/agents/name`, `@org/skills/name`) to its kind,
 * its latest version and, per version, its install code, its archive (relative to the
 * registry) and the archive's SHA-256. Install checks the digest before unpacking anything.
 */

const VersionEntrySchema = z.strictObject({
  code: z.string().regex(/^(AGNT|SKIL)-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/, { error: 'expected an install code such as "AGNT-7QK2-M4XD"' }),
  archive: z.string().regex(/^archives\/[A-Za-z0-9@._/-]+\.tgz$/, { error: 'expected a path such as "archives/agents/acme/briefing-1.0.0.tgz"' }),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, { error: 'expected 64 hex digits' }),
});

const RegistryIndexSchema = z.strictObject({
  format: z.literal(1),
  entries: z.record(
    z.string(),
    z.strictObject({
      kind: z.enum(['agent', 'skill']),
      latest: z.string(),
      versions: z.record(z.string(), VersionEntrySchema),
    }),
  ),
});

type RegistryIndex = z.output<typeof RegistryIndexSchema>;

const QUALIFIED = /^@([a-z0-9][a-z0-9-]*)\/(agents|skills)\/([a-z0-9][a-z0-9-]*)(?:@([0-9A-Za-z.+-]+))?$/;

/** A parsed `@org/agents/name[@version]` or `@org/skills/name[@version]`. */
export interface QualifiedName {
  kind: 'agent' | 'skill';
  org: string;
  name: string;
  /** Without the version. */
  qualified: string;
  version?: string;
}

/** @throws {PackageError} for anything but `@org/agents/name[@version]` or `@org/skills/name[@version]`. */
export function parseQualifiedName(text: string): QualifiedName {
  const match = QUALIFIED.exec(text);
  if (match === null) throw new PackageError(`"${text}" is not a qualified name: expected @org/agents/name or @org/skills/name, optionally with @version`);
  const [, org = '', plural = '', name = '', version] = match;
  return { kind: plural === 'agents' ? 'agent' : 'skill', org, name, qualified: `@${org}/${plural}/${name}`, ...(version === undefined ? {} : { version }) };
}

function parseIndex(text: string, registry: string): RegistryIndex {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new PackageError(`registry "${registry}": index.json is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const parsed = RegistryIndexSchema.safeParse(document, { reportInput: true });
  if (!parsed.success) throw new PackageError(`registry "${registry}": index.json: ${formatIssues(parsed.error, { style: 'json' }).join('; ')}`);
  return parsed.data;
}

const isUrl = (location: string): boolean => /^https?:\/\//i.test(location);

async function readFromRegistry(registry: string, path: string, fetcher: typeof fetch): Promise<Uint8Array | undefined> {
  if (isUrl(registry)) {
    const url = new URL(path, registry.endsWith('/') ? registry : `${registry}/`);
    const response = await fetcher(url);
    if (response.status === 404) return undefined;
    if (!response.ok) throw new PackageError(`registry "${registry}": GET ${url.href} answered ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }
  try {
    return await readFile(join(registry, path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Publishes a package or skill folder: writes its archive and adds the version to index.json
 * (created with the folder when missing). Versions are immutable: the same version again with
 * other bytes is refused; with the same bytes it changes nothing.
 */
export async function publishToRegistry(options: { registry: string; source: string; kind: 'agent' | 'skill'; name: string; version: string }): Promise<{ code: string; archive: string; sha256: string }> {
  const parsed = parseQualifiedName(options.name);
  if (parsed.kind !== options.kind) throw new PackageError(`"${options.name}" names ${parsed.kind === 'agent' ? 'a package' : 'a skill'}, but a ${options.kind === 'agent' ? 'package' : 'skill'} is being published`);
  if (!/^[0-9A-Za-z.+-]+$/.test(options.version)) throw new PackageError(`"${options.version}" is not a version such as "1.0.0"`);
  const registry = resolve(options.registry);
  await mkdir(registry, { recursive: true });
  const indexText = await readFile(join(registry, 'index.json'), 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  });
  const index: RegistryIndex = indexText === undefined ? { format: 1, entries: {} } : parseIndex(indexText, registry);
  const bytes = await packFolder(options.source);
  const sha256 = sha256Hex(bytes);
  const code = installCodeFor(options.kind === 'agent' ? 'AGNT' : 'SKIL', parsed.qualified, options.version);
  const existing = index.entries[parsed.qualified]?.versions[options.version];
  if (existing !== undefined) {
    if (existing.sha256 === sha256) return { code: existing.code, archive: existing.archive, sha256 };
    throw new PackageError(`${parsed.qualified}@${options.version} is already published with other contents; versions are immutable, so publish a new version`);
  }
  for (const [name, entry] of Object.entries(index.entries)) {
    for (const [version, published] of Object.entries(entry.versions)) {
      if (published.code === code) throw new PackageError(`install code ${code} is taken by ${name}@${version}; publish under another version`);
    }
  }
  const archive = `archives/${options.kind === 'agent' ? 'agents' : 'skills'}/${parsed.org}/${parsed.name}-${options.version}.tgz`;
  await mkdir(dirname(join(registry, archive)), { recursive: true });
  await writeFile(join(registry, archive), bytes);
  const entry = index.entries[parsed.qualified] ?? { kind: options.kind, latest: options.version, versions: {} };
  entry.versions[options.version] = { code, archive, sha256 };
  entry.latest = Object.keys(entry.versions).sort(compareSkillVersions).at(-1) ?? options.version;
  index.entries[parsed.qualified] = entry;
  const temporary = join(registry, `index.json.${process.pid}.tmp`);
  await writeFile(temporary, `${JSON.stringify(index, null, 2)}\n`);
  await rename(temporary, join(registry, 'index.json'));
  return { code, archive, sha256 };
}

/** What a registry resolved: the archive's bytes, its digest checked. */
export interface ResolvedArchive {
  kind: 'agent' | 'skill';
  /** The qualified name, without the version. */
  name: string;
  version: string;
  code: string;
  bytes: Uint8Array;
  registry: string;
}

/**
 * Finds an install code or a qualified name (`@org/agents/name`, optionally `@version`) in the
 * registries, in order, reads its archive and checks its SHA-256. A code is checked before any
 * lookup.
 * @throws {PackageError} for a malformed reference, one found nowhere (the registries named),
 *   or a digest mismatch (the archive, the expected and the actual digest named).
 */
export async function resolveFromRegistries(registries: readonly string[], reference: string, options: { fetch?: typeof fetch } = {}): Promise<ResolvedArchive> {
  const fetcher = options.fetch ?? fetch;
  const code = isInstallCode(reference) ? parseInstallCode(reference).code : undefined;
  const wanted = code === undefined ? parseQualifiedName(reference) : undefined;
  for (const registry of registries) {
    const indexBytes = await readFromRegistry(registry, 'index.json', fetcher);
    if (indexBytes === undefined) continue;
    const index = parseIndex(Buffer.from(indexBytes).toString('utf8'), registry);
    let found: { name: string; kind: 'agent' | 'skill'; version: string; entry: z.output<typeof VersionEntrySchema> } | undefined;
    for (const [name, entry] of Object.entries(index.entries)) {
      if (wanted !== undefined && name !== wanted.qualified) continue;
      for (const [version, published] of Object.entries(entry.versions)) {
        const matches = code === undefined ? version === (wanted?.version ?? entry.latest) : published.code === code;
        if (matches) found = { name, kind: entry.kind, version, entry: published };
      }
    }
    if (found === undefined) continue;
    const bytes = await readFromRegistry(registry, found.entry.archive, fetcher);
    if (bytes === undefined) throw new PackageError(`registry "${registry}": ${found.name}@${found.version} lists ${found.entry.archive}, which is missing`);
    const actual = sha256Hex(bytes);
    if (actual !== found.entry.sha256) {
      throw new PackageError(`registry "${registry}": the archive ${found.entry.archive} of ${found.name}@${found.version} does not match its digest (expected sha256 ${found.entry.sha256}, got ${actual}); nothing was installed`);
    }
    return { kind: found.kind, name: found.name, version: found.version, code: found.entry.code, bytes, registry };
  }
  throw new PackageError(`"${reference}" is in none of the registries searched: ${registries.length === 0 ? '(none configured: add [[registries]] to config.toml)' : registries.join(', ')}`);
}
