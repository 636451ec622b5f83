import { lstat, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { z } from 'zod';
import { PackageError } from '../errors/index.ts';
import { ManifestCapabilitiesSchema, NamedModelConfigSchema } from '../manifest/index.ts';
import { DEFAULT_API_KEY_ENV } from '../models/index.ts';
import { formatIssues, objectKeysAt, safeParseJson } from '../validation/index.ts';
import { unpackArchive } from './archive.ts';
import { listPackageFolder, specialEntryProblem } from './package-folder.ts';
import { type AgentJson, AgentJsonSchema, inheritedKeyProblems } from './package-schema.ts';

/** A package slug: its agent's name and its events' namespace, so no dots. */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** Slugs that are words of the packages API (`/api/packages/runs`, `/api/packages/check`). */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set(['runs', 'check']);

/** `@org/agents/name`, optionally `@version`. */
const QUALIFIED_PACKAGE = /^@[a-z0-9][a-z0-9-]*\/agents\/([a-z0-9][a-z0-9-]*)$/;

/**
 * `loom.toml`: what spec/04 leaves out, all optional. `[package]` names and versions the
 * package; `[model]` is its agent's own model (for messages sent to it; AGENT.md is the system
 * prompt); `[capabilities]` is what the package asks for, instead of what Loom derives from its
 * activities.
 */
export const LoomTomlSchema = z.strictObject({
  package: z
    .strictObject({
      name: z.string().regex(QUALIFIED_PACKAGE, { error: 'expected a qualified name such as "@acme/agents/chief-of-staff"' }).optional(),
      version: z
        .string()
        .regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/, { error: 'expected a version such as "1.0.0"' })
        .default('0.1.0'),
      description: z.string().default(''),
    })
    .prefault({}),
  model: NamedModelConfigSchema.refine((model) => model.system_prompt === undefined, {
    error: 'system_prompt is not used here: AGENT.md is the system prompt',
    path: ['system_prompt'],
  })
    // A package's own URL with the provider's default key would send the owner's key to a host the package chose.
    .refine((model) => model.base_url === undefined || model.api_key_env !== undefined || DEFAULT_API_KEY_ENV[model.provider] === null, {
      error: (issue) => {
        const provider = (issue.input as { provider: keyof typeof DEFAULT_API_KEY_ENV }).provider;
        return `base_url without api_key_env would send $${DEFAULT_API_KEY_ENV[provider] ?? '?'} to the package's URL; name the variable to send with api_key_env`;
      },
      path: ['api_key_env'],
    })
    .optional(),
  capabilities: ManifestCapabilitiesSchema.optional(),
});

export type LoomToml = z.output<typeof LoomTomlSchema>;

/** A package read from disk and validated on its own (nothing about the daemon checked yet). */
export interface LoadedPackage {
  /** The agent's name and the events' namespace. */
  slug: string;
  /** `@org/agents/name`, when `loom.toml` gives it. */
  qualifiedName: string | undefined;
  version: string;
  description: string;
  /** The folder it was read from (for an archive, where it was unpacked). */
  dir: string;
  /** AGENT.md: the system prompt. */
  persona: string;
  /** `agent.json` as written (for `--set`, which validates the result again). */
  rawAgentJson: unknown;
  agentJson: AgentJson;
  loomToml: LoomToml;
}

/** Files larger than this are refused before parsing. */
const MAX_FILE_BYTES = 1024 * 1024;

function fail(source: string, problem: string, lines: readonly string[] = []): never {
  const more = lines.length === 0 ? '' : `\n${lines.map((line) => `  ${line}`).join('\n')}`;
  throw new PackageError(`cannot load package "${source}": ${problem}${more}`, { details: { source, problem, more: [...lines] } });
}

/** Reads one file of the package folder `dir` loaded from `source`; a missing one is undefined, or an error when `required`. */
async function readText(read: { dir: string; file: string; source: string; required: boolean }): Promise<string | undefined> {
  const { dir, file, source, required } = read;
  const path = join(dir, file);
  try {
    // lstat, so that a link found here is refused as one (the folder was listed without links, but
    // may change between that and this read: a package folder is the owner's to keep still).
    const info = await lstat(path);
    if (!info.isFile()) fail(source, `${file} is not a file`);
    if (info.size > MAX_FILE_BYTES) fail(source, `${file} is larger than ${MAX_FILE_BYTES} bytes`);
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (!required) return undefined;
    return fail(source, `${file} is missing (a package is a folder holding AGENT.md, the persona, and agent.json, its workflows)`);
  }
}

/**
 * Validates `agent.json`'s parsed document: one line per problem, each `agent.json: <path>:
 * <what was expected>`.
 * @throws {PackageError} naming the source.
 */
export function parseAgentJson(document: unknown, source: string): AgentJson {
  const inherited = inheritedKeyProblems(document);
  const parsed = AgentJsonSchema.safeParse(document, { reportInput: true });
  if (parsed.success && inherited.length === 0) return parsed.data;
  const lines = [
    ...inherited,
    ...(parsed.success ? [] : formatIssues(parsed.error, { style: 'json', knownKeys: (path) => objectKeysAt(AgentJsonSchema, path) })),
  ].map((line) => `agent.json: ${line}`);
  return fail(source, lines.length === 1 ? (lines[0] ?? '') : `agent.json has ${lines.length} problems:`, lines.length === 1 ? [] : lines);
}

function parseLoomToml(text: string, source: string): LoomToml {
  let document: unknown;
  try {
    document = parseToml(text);
  } catch (error) {
    if (error instanceof TomlError)
      fail(source, `loom.toml: TOML syntax error at line ${error.line}, column ${error.column}: ${error.message.split('\n')[0] ?? ''}`);
    throw error;
  }
  const parsed = LoomTomlSchema.safeParse(document, { reportInput: true });
  if (parsed.success) return parsed.data;
  const lines = formatIssues(parsed.error, { style: 'toml', knownKeys: (path) => objectKeysAt(LoomTomlSchema, path) }).map((line) => `loom.toml: ${line}`);
  return fail(source, lines.length === 1 ? (lines[0] ?? '') : `loom.toml has ${lines.length} problems:`, lines.length === 1 ? [] : lines);
}

/**
 * Reads and validates a package folder: AGENT.md (required, not empty), agent.json (spec/04's
 * schema) and the optional loom.toml. The slug is `slug` when given, else the last part of
 * `[package].name`, else `fallbackSlug` (an archive's file name), else the folder's name. The
 * folder (its bundled skills included) must hold only files and folders, as a packed one does.
 * @throws {PackageError} naming the folder, the file, the JSON path and what is wrong; for a
 *   symbolic link, FIFO, socket or device anywhere in the folder, naming it and what it is.
 */
export async function loadPackageFolder(dir: string, options: { slug?: string; source?: string; fallbackSlug?: string } = {}): Promise<LoadedPackage> {
  const source = options.source ?? dir;
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) fail(source, 'no such folder (expected a package folder, a .tgz of one, an install code or @org/agents/name)');
  // A link would make a file outside the package its persona or a skill (and send it to a model
  // host the package names); a FIFO or a device would hang the read or fail the install halfway.
  const listing = await listPackageFolder(dir);
  if (!listing.ok) fail(source, specialEntryProblem(listing.special, 'package'));
  const persona = (await readText({ dir, file: 'AGENT.md', source, required: true })) ?? '';
  if (persona.trim() === '') fail(source, 'AGENT.md is empty; it is the persona ("You are a …"), and becomes the system prompt');
  const jsonText = (await readText({ dir, file: 'agent.json', source, required: true })) ?? '';
  const json = safeParseJson(jsonText);
  if (!json.ok) fail(source, `agent.json: JSON syntax error: ${json.message}`);
  const agentJson = parseAgentJson(json.value, source);
  const tomlText = await readText({ dir, file: 'loom.toml', source, required: false });
  const loomToml = tomlText === undefined ? LoomTomlSchema.parse({}) : parseLoomToml(tomlText, source);
  const qualifiedName = loomToml.package.name;
  const slug =
    options.slug ?? (qualifiedName === undefined ? (options.fallbackSlug ?? basename(resolve(dir))) : (QUALIFIED_PACKAGE.exec(qualifiedName)?.[1] ?? ''));
  if (RESERVED_SLUGS.has(slug)) {
    fail(
      source,
      `the package's slug "${slug}" is a word of the packages API (${[...RESERVED_SLUGS].join(', ')}); name the folder otherwise, or set [package].name in loom.toml`,
    );
  }
  if (!SLUG_PATTERN.test(slug)) {
    fail(
      source,
      `the package's slug "${slug}" (its agent's name and event namespace) must be lowercase letters, digits and "-"; name the folder so, or set [package].name in loom.toml`,
    );
  }
  return {
    slug,
    qualifiedName,
    version: loomToml.package.version,
    description: loomToml.package.description,
    dir,
    persona,
    rawAgentJson: json.value,
    agentJson,
    loomToml,
  };
}

/**
 * Reads a package from a folder or a `.tgz` of one (unpacked into a temporary folder, removed
 * by `dispose`; an installed package keeps its own copy).
 */
export async function loadPackage(source: string, options: { slug?: string } = {}): Promise<{ loaded: LoadedPackage; dispose: () => Promise<void> }> {
  if (!/\.(?:tgz|tar\.gz)$/i.test(source)) return { loaded: await loadPackageFolder(source, options), dispose: () => Promise.resolve() };
  const bytes = await readFile(source).catch((error: unknown) => fail(source, `cannot read the archive: ${(error as Error).message}`));
  return loadPackageArchive(bytes, source, options);
}

/** Unpacks an archive's bytes into a temporary folder and loads the package in it. */
export async function loadPackageArchive(
  bytes: Uint8Array,
  source: string,
  options: { slug?: string } = {},
): Promise<{ loaded: LoadedPackage; dispose: () => Promise<void> }> {
  const scratch = await mkdtemp(join(tmpdir(), 'loom-package-'));
  const dispose = (): Promise<void> => rm(scratch, { recursive: true, force: true });
  try {
    const root = await unpackArchive(bytes, scratch);
    const fallbackSlug = basename(source).replace(/(?:-\d+\.\d+\.\d+[^/]*)?\.(?:tgz|tar\.gz)$/i, '');
    const loaded = await loadPackageFolder(root, { source, fallbackSlug, ...(options.slug === undefined ? {} : { slug: options.slug }) });
    return { loaded, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}
