import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { PackageError } from '../errors/index.ts';
import { formatIssues, safeParseJson } from '../validation/index.ts';
import type { LoadedSkill } from './skills.ts';

/**
 * Where an installed skill version came from (docs/packages.md, "Where a skill comes from"). It
 * is recorded when the version is installed, in `<skills>/.origins/<org>/<name>/<version>.json`,
 * beside the skill's folder rather than in it, so the folder's digest stays the digest of the
 * skill's own files. Hidden, and never a valid org, so no lookup of skills ever lists it.
 */

/**
 * Where a skill's files came from: a registry (the archive's SHA-256 checked against its index),
 * or a package that brought the skill in its own `skills/` folder, the package itself from a
 * folder, an archive or a registry. `unknown` is an installed copy with no trustworthy record:
 * installed before origins were recorded, or its files changed since.
 */
export type SkillOrigin =
  | { kind: 'registry'; registry: string; code: string; sha256: string }
  | {
      kind: 'bundled';
      /** The package that brought it: its qualified name, else its slug. */
      package: string;
      /** Where that package came from, as its install names it: a folder, an archive, or `@org/agents/name@version (code, registry)`. */
      source: string;
      /** The registry that package came from; null for a folder or an archive. */
      registry: string | null;
    }
  | { kind: 'unknown'; reason: string };

/**
 * A skill as an install resolved it: the digest of its files (`packageFolderDigest`) and where
 * they come from. A skill version is its name, its version and this digest.
 */
export interface SourcedSkill extends LoadedSkill {
  digest: string;
  origin: SkillOrigin;
}

/** An installed copy's record: where it came from and which package's install put it there. */
export interface InstalledSkillOrigin {
  origin: SkillOrigin;
  /** The slug of the package whose install wrote the copy; null when not recorded. */
  installedBy: string | null;
}

const HEX = /^[0-9a-f]{64}$/;

const RecordedOriginSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('registry'), registry: z.string().min(1), code: z.string().min(1), sha256: z.string().regex(HEX) }),
  z.strictObject({ kind: z.literal('bundled'), package: z.string().min(1), source: z.string(), registry: z.string().min(1).nullable() }),
]);

const OriginFileSchema = z.strictObject({
  format: z.literal(1),
  skill: z.string(),
  digest: z.string().regex(HEX, { error: 'expected 64 lowercase hex digits' }),
  origin: RecordedOriginSchema,
  installedBy: z.string().min(1),
  installedAt: z.string(),
});

/** `<skillsDir>/.origins/<org>/<name>/<version>.json`: where the origin of an installed version is kept. */
export function skillOriginPath(skillsDir: string, skill: Pick<LoadedSkill, 'reference' | 'name' | 'version'>): string {
  return join(skillsDir, '.origins', skill.reference.org, skill.name, `${skill.version}.json`);
}

/**
 * Records where an installed version came from. Written once, when the version is installed:
 * a later install that takes the same files leaves the first record as it is.
 */
export async function writeSkillOrigin(skillsDir: string, skill: SourcedSkill, record: { installedBy: string; installedAt: number }): Promise<string> {
  if (skill.origin.kind === 'unknown')
    throw new PackageError(`cannot record where skill "${skill.reference.qualified}@${skill.version}" came from: its origin is unknown`);
  const path = skillOriginPath(skillsDir, skill);
  const file: z.input<typeof OriginFileSchema> = {
    format: 1,
    skill: `${skill.reference.qualified}@${skill.version}`,
    digest: skill.digest,
    origin: skill.origin,
    installedBy: record.installedBy,
    installedAt: new Date(record.installedAt).toISOString(),
  };
  await mkdir(dirname(path), { recursive: true });
  const temporary = join(dirname(path), `.${randomUUID()}.tmp`);
  try {
    await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`);
    await rename(temporary, path);
  } finally {
    await rm(temporary, { force: true });
  }
  return path;
}

/**
 * Where the installed copy `skill` (found in `skillsDir`) came from, given the digest of its
 * files now. A copy with no record, or whose files are not those recorded, is of unknown origin.
 * @throws {PackageError} naming the record when it is not one Loom wrote (not JSON, a field wrong).
 */
export async function readSkillOrigin(skillsDir: string, skill: LoadedSkill, digest: string): Promise<InstalledSkillOrigin> {
  const path = skillOriginPath(skillsDir, skill);
  const text = await readFile(path, 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  });
  if (text === undefined) return { origin: { kind: 'unknown', reason: 'installed with no record of where it came from' }, installedBy: null };
  const cannot = `cannot read where skill "${skill.reference.qualified}@${skill.version}" came from: "${path}"`;
  const fix = `delete it, and the installed copy is taken as of unknown origin`;
  const json = safeParseJson(text);
  if (!json.ok) throw new PackageError(`${cannot} is not valid JSON (${json.message}); ${fix}`, { details: { path } });
  const parsed = OriginFileSchema.safeParse(json.value, { reportInput: true });
  if (!parsed.success) throw new PackageError(`${cannot}: ${formatIssues(parsed.error, { style: 'json' }).join('; ')}; ${fix}`, { details: { path } });
  const recorded = parsed.data;
  if (recorded.digest !== digest) {
    return {
      origin: { kind: 'unknown', reason: `its files changed since it was installed, ${describeSkillOrigin(recorded.origin)}` },
      installedBy: recorded.installedBy,
    };
  }
  return { origin: recorded.origin, installedBy: recorded.installedBy };
}

/**
 * The origin in words, for plans and messages: `from registry "https://…" (SKIL-…)`,
 * `bundled by package "@acme/agents/x" from "/path/x"` (or `from registry "…"`), `of unknown origin (…)`.
 */
export function describeSkillOrigin(origin: SkillOrigin): string {
  switch (origin.kind) {
    case 'registry':
      return `from registry "${origin.registry}" (${origin.code})`;
    case 'bundled':
      return `bundled by package "${origin.package}" from ${origin.registry === null ? `"${origin.source}"` : `registry "${origin.registry}"`}`;
    case 'unknown':
      return `of unknown origin (${origin.reason})`;
  }
}

/**
 * Whether a copy of this origin may serve a skill of `org` to a package from a registry that does
 * not bring the skill itself, when no registry lists the skill: a copy from a registry, or one a
 * package of the skill's own organisation brought from a registry. Copies a folder or an archive
 * brought, or of another organisation's package, are the owner's files, not the skill's publisher's.
 */
export function vouchesForSkill(origin: SkillOrigin, org: string): boolean {
  if (origin.kind === 'registry') return true;
  return origin.kind === 'bundled' && origin.registry !== null && origin.package.startsWith(`@${org}/`);
}
