import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PackageError } from '../errors/index.ts';
import { unpackArchive } from './archive.ts';
import { packageFolderDigest } from './package-folder.ts';
import { findInRegistries, resolveFromRegistries } from './registry.ts';
import { describeSkillOrigin, readSkillOrigin, type SourcedSkill, vouchesForSkill } from './skill-origin.ts';
import type { LoadedPackage } from './load-package.ts';
import { findInstalledSkill, loadSkillFolder, parseSkillReference, resolveSkillClosure, type SkillReference } from './skills.ts';

/** What asks for a skill: a package (where its own `skills/` are, its name, where it came from), or a skill installed by code. */
export interface SkillRequester {
  /** The folder whose `skills/` may bring the skill; null when nothing brings its own (a skill installed by code). */
  dir: string | null;
  /** Its qualified name, else its slug. */
  name: string;
  source: string;
  /** The registry it came from; null for a folder or an archive. */
  registry: string | null;
}

/** Where skills are looked for. */
export interface SkillFinderOptions {
  /** Registries (folders or URLs), in order. */
  registries: readonly string[];
  /** Where installed skills are kept (the Loom home's `skills/`). */
  skillsDir: string;
  fetch?: typeof fetch;
}

/** Finds a skill for a requester; `scratch` collects the folders it unpacked archives to (the caller removes them). */
export type SkillFinder = (reference: SkillReference, from: SkillRequester, scratch: string[]) => Promise<SourcedSkill>;

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * A finder of skills (docs/packages.md, "Where a skill comes from"): from the requesting package's
 * own `skills/<name>/`; else from a registry that lists it (a registry's copy is the genuine one:
 * an installed copy with other files is refused by the check that follows); else an installed
 * copy, which a package from a registry takes only when {@link vouchesForSkill} says so.
 * @throws {PackageError} from the finder when no place has the skill: the message names each
 *   place looked in (the package's folder, the installed skills' folder, the registries).
 */
export function createSkillFinder(options: SkillFinderOptions): SkillFinder {
  const fetchOptions = options.fetch === undefined ? {} : { fetch: options.fetch };
  return async (reference, from, scratch) => {
    const label = `${reference.qualified}${reference.version === undefined ? '' : `@${reference.version}`}`;
    const bundled = from.dir === null ? undefined : join(from.dir, 'skills', reference.name);
    if (bundled !== undefined && (await exists(join(bundled, 'SKILL.md')))) {
      const skill = await loadSkillFolder(bundled, reference.org);
      if (reference.version === undefined || reference.version === skill.version) {
        return {
          ...skill,
          digest: await packageFolderDigest(skill.dir, 'skill'),
          origin: { kind: 'bundled', package: from.name, source: from.source, registry: from.registry },
        };
      }
    }
    const listed = options.registries.length === 0 ? undefined : await findInRegistries(options.registries, label, fetchOptions);
    if (listed !== undefined) {
      const folder = await mkdtemp(join(tmpdir(), 'loom-skill-'));
      scratch.push(folder);
      const skill = await loadSkillFolder(await unpackArchive(listed.bytes, folder), reference.org);
      if (skill.version !== listed.version) {
        throw new PackageError(
          `cannot use skill ${listed.name}@${listed.version} from registry "${listed.registry}": its SKILL.md says version ${skill.version} (metadata.version); the archive is not the version the index lists, so it is refused`,
        );
      }
      return {
        ...skill,
        digest: await packageFolderDigest(skill.dir, 'skill'),
        origin: { kind: 'registry', registry: listed.registry, code: listed.code, sha256: listed.sha256 },
      };
    }
    const installed = await findInstalledSkill(options.skillsDir, reference);
    if (installed !== undefined) {
      const digest = await packageFolderDigest(installed.dir, 'skill');
      const { origin } = await readSkillOrigin(options.skillsDir, installed, digest);
      if (from.registry !== null && !vouchesForSkill(origin, reference.org)) {
        const name = `${installed.reference.qualified}@${installed.version}`;
        throw new PackageError(
          `cannot use skill "${name}" for package "${from.name}" from registry "${from.registry}": the package does not bring it, no registry in config.toml lists it, and the installed copy ("${installed.dir}", digest ${digest}) is ${describeSkillOrigin(origin)}; a package from a registry takes a skill it does not bring only from a registry, or as a package of the skill's own organisation from a registry brought it. Publish the skill to a registry listed in [[registries]], or, if you trust the installed copy, install the package from its folder or archive`,
          { details: { skill: name, package: from.name, installed: { folder: installed.dir, digest, origin } } },
        );
      }
      return { ...installed, digest, origin };
    }
    // Where it was looked for, for the message: the package's own folder and the installed skills.
    const places = [
      ...(bundled === undefined
        ? []
        : [`not in the package's skills/ folder ("${bundled}"${reference.version === undefined ? '' : ` at version ${reference.version}`})`]),
      `not installed ("${join(options.skillsDir, reference.org, reference.name)}")`,
    ].join(', ');
    if (options.registries.length === 0) {
      throw new PackageError(`cannot find skill "${label}": ${places}, and config.toml lists no [[registries]]`, { details: { skill: label, missing: true } });
    }
    // Asked again only to say what the registries have under the name instead.
    return resolveFromRegistries(options.registries, label, fetchOptions).then(
      () => {
        throw new PackageError(`cannot find skill "${label}": the registries changed while it was looked up; try again`);
      },
      (error: unknown) => {
        if (!(error instanceof PackageError)) throw error;
        throw new PackageError(`cannot find skill "${label}": ${places}, and ${error.message}`, {
          details: { ...error.details, skill: label, missing: true },
          cause: error,
        });
      },
    );
  };
}

/**
 * Resolves every skill a package names in agent.json (`loom package validate`), dependencies
 * included, where an install would look: the package's `skills/`, the registries, the installed
 * skills. Passes when each is found (a bundled one must be a valid skill folder).
 * @throws {PackageError} naming every skill that cannot be found, each with the places looked in
 *   (`details.missing` lists their messages).
 */
export async function checkPackageSkills(
  loaded: Pick<LoadedPackage, 'dir' | 'slug' | 'qualifiedName' | 'agentJson'>,
  options: SkillFinderOptions,
  source: string,
): Promise<void> {
  const find = createSkillFinder(options);
  const requester: SkillRequester = { dir: loaded.dir, name: loaded.qualifiedName ?? loaded.slug, source, registry: null };
  const scratch: string[] = [];
  const missing: string[] = [];
  try {
    const roots = loaded.agentJson.skills.map((skill, index) => parseSkillReference(skill, `agent.json: skills[${index}]`));
    for (const root of roots) {
      await resolveSkillClosure([root], (reference) => find(reference, requester, scratch)).catch((error: unknown) => {
        if (!(error instanceof PackageError) || error.details['missing'] !== true) throw error;
        missing.push(error.message);
      });
    }
  } finally {
    await Promise.all(scratch.map((folder) => rm(folder, { recursive: true, force: true })));
  }
  if (missing.length > 0) {
    throw new PackageError(
      `package "${loaded.slug}" is not valid: ${missing.length === 1 ? 'a skill it names cannot be found' : `${missing.length} skills it names cannot be found`}:\n${missing.map((line) => `  ${line}`).join('\n')}`,
      { details: { missing } },
    );
  }
}
