import { randomUUID } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { PackageError } from '../errors/index.ts';
import { describeValue, formatIssue, objectKeysAt, yamlLibrary } from '../validation/index.ts';
import { copyPackageFolder, listPackageFolder, packageFolderDigest, specialEntryProblem } from './package-folder.ts';
import { describeSkillOrigin, readSkillOrigin, type SourcedSkill, writeSkillOrigin } from './skill-origin.ts';

/**
 * Skills (spec/04 "Skill References"): Agent Skills folders, a `SKILL.md` whose YAML front
 * matter names and describes the skill, followed by its instructions in markdown. Loom reads
 * the standard fields and adds one, `dependencies`: the skills this one needs, installed with it
 * (spec/04 "Installation Lifecycle", step 2 "Cascade").
 */

/** `@org/skills/name`, optionally pinned to a version (`@org/skills/name@1.2.0`). */
export interface SkillReference {
  org: string;
  name: string;
  /** The pinned version; none means the latest. */
  version?: string;
  /** `@org/skills/name`, without the version. */
  qualified: string;
}

/** What a `SKILL.md` says. */
export interface SkillFile {
  name: string;
  description: string;
  /** `metadata.version`, else `"0.0.0"`. */
  version: string;
  /** The markdown after the front matter, trimmed. */
  instructions: string;
  dependencies: SkillReference[];
}

/** A skill read from its folder. */
export interface LoadedSkill extends SkillFile {
  /** Its own reference, pinned to its version. */
  reference: SkillReference;
  /** The folder holding its `SKILL.md` (and whatever else it ships). */
  dir: string;
}

/** The version a skill has when its `metadata.version` is not given. */
export const DEFAULT_SKILL_VERSION = '0.0.0';

/** `SKILL.md` files larger than this are refused before parsing. */
const MAX_SKILL_BYTES = 1024 * 1024;

const ORG = /^[a-z0-9][a-z0-9-]*$/;
/** Agent Skills names: 1–64 lowercase letters and digits, single hyphens between them. */
const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
// A version becomes a folder name, so it starts with a letter or digit ("..", "." are refused).
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]*$/;
const REFERENCE = /^@([a-z0-9][a-z0-9-]*)\/skills\/([a-z0-9][a-z0-9-]*)(?:@([0-9A-Za-z][0-9A-Za-z.+-]*))?$/;
const REFERENCE_FORM = 'expected a skill reference such as "@org/skills/name" or "@org/skills/name@1.0.0" (org and name of lowercase letters, digits and "-")';

/**
 * Parses a skill reference: `@org/skills/name` (the latest version) or `@org/skills/name@version`.
 * @throws {PackageError} naming `where`, the text and the expected form.
 * @example parseSkillReference('@nebo/skills/web-scraper@1.2.0') // { org: 'nebo', name: 'web-scraper', version: '1.2.0', qualified: '@nebo/skills/web-scraper' }
 */
export function parseSkillReference(text: string, where = 'skill reference'): SkillReference {
  const match = REFERENCE.exec(text);
  if (match === null) throw new PackageError(`${where}: ${REFERENCE_FORM}, got ${JSON.stringify(text)}`, { details: { where, text } });
  const [, org = '', name = '', version] = match;
  return { org, name, qualified: `@${org}/skills/${name}`, ...(version === undefined ? {} : { version }) };
}

/** A reference written out: `@org/skills/name` or `@org/skills/name@version`. */
function referenceText(reference: SkillReference): string {
  return reference.version === undefined ? reference.qualified : `${reference.qualified}@${reference.version}`;
}

/** The front matter of a `SKILL.md`: the Agent Skills fields, strict, plus Loom's `dependencies`. */
const SkillFrontMatterSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(64)
    .regex(SKILL_NAME, { error: 'expected lowercase letters, digits and single hyphens, not starting or ending with a hyphen, such as "note-taker"' }),
  description: z.string().min(1, { error: 'expected what the skill does and when to use it, in words' }).max(1024),
  license: z.string().optional(),
  compatibility: z.string().max(500).optional(),
  metadata: z
    .record(z.string(), z.string())
    .superRefine((metadata, context) => {
      const version = metadata['version'];
      if (version !== undefined && !VERSION.test(version)) {
        context.addIssue({ code: 'custom', path: ['version'], message: `expected a version such as "1.0.0", got ${JSON.stringify(version)}` });
      }
    })
    .optional(),
  'allowed-tools': z.string().optional(),
  dependencies: z.array(z.string().regex(REFERENCE, { error: REFERENCE_FORM })).default([]),
});

function fail(source: string, problem: string, lines: readonly string[] = []): never {
  const more = lines.length === 0 ? '' : `\n${lines.map((line) => `  ${line}`).join('\n')}`;
  throw new PackageError(`cannot load skill "${source}": ${problem}${more}`, { details: { source, problem, more: [...lines] } });
}

/** One line per zod issue; a YAML number or boolean where a string belongs gets a hint to quote it. */
function problemLines(error: z.ZodError): string[] {
  return error.issues.flatMap((issue) => {
    const lines = formatIssue(issue, { style: 'json', knownKeys: (path) => objectKeysAt(SkillFrontMatterSchema, path) });
    const unquoted = issue.code === 'invalid_type' && issue.expected === 'string' && (typeof issue.input === 'number' || typeof issue.input === 'boolean');
    return unquoted ? lines.map((line) => `${line} (YAML reads it as a ${typeof issue.input}; put it in quotes: "${String(issue.input)}")`) : lines;
  });
}

/**
 * What to say of front matter whose aliases expand past the YAML library's limit: the top-level
 * field (and its line in SKILL.md) whose value does it, found by reading each field's value on its
 * own, else the front matter as a whole.
 */
function aliasBombProblem(frontMatter: string, error: ReferenceError): string {
  const yaml = yamlLibrary();
  const lineCounter = new yaml.LineCounter();
  const document = yaml.parseDocument(frontMatter, { logLevel: 'error', lineCounter });
  const fix = 'write the value out, or use fewer aliases (*name)';
  if (yaml.isMap(document.contents)) {
    for (const pair of document.contents.items) {
      if (!yaml.isNode(pair.value)) continue;
      try {
        pair.value.toJS(document);
      } catch (inner) {
        if (!(inner instanceof ReferenceError)) throw inner;
        const key = yaml.isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const offset = yaml.isNode(pair.key) ? pair.key.range?.[0] : undefined;
        // The front matter starts on the file's second line.
        const at = offset === undefined ? '' : ` (line ${lineCounter.linePos(offset).line + 1})`;
        return `the front matter's field ${JSON.stringify(key)}${at} expands its YAML aliases too far (${inner.message}); ${fix}`;
      }
    }
  }
  return `the front matter expands its YAML aliases too far (${error.message}); ${fix}`;
}

/**
 * Parses a `SKILL.md`: YAML front matter between `---` lines, then the instructions.
 * @param source The file, as error messages name it.
 * @throws {PackageError} naming the file, each field and what was expected (a did-you-mean for
 *   an unknown key), the YAML syntax error and its line, or the field whose aliases expand too far.
 */
export function parseSkillFile(text: string, source: string): SkillFile {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const example = 'e.g.\n---\nname: note-taker\ndescription: Keeps structured notes. Use it when asked to write something down.\n---';
  if (lines[0]?.trimEnd() !== '---') fail(source, `SKILL.md must start with "---" front matter holding name and description, ${example}`);
  const end = lines.findIndex((line, index) => index > 0 && line.trimEnd() === '---');
  if (end === -1) fail(source, `the front matter has no closing "---" line, ${example}`);

  let document: unknown;
  try {
    document = yamlLibrary().parse(lines.slice(1, end).join('\n'), { logLevel: 'error' });
  } catch (error) {
    // The YAML library refuses aliases that would expand past its limit (a "billion laughs").
    if (error instanceof ReferenceError) fail(source, aliasBombProblem(lines.slice(1, end).join('\n'), error));
    if (!(error instanceof yamlLibrary().YAMLParseError)) throw error;
    const position = error.linePos?.[0];
    // The front matter starts on the file's second line.
    const at = position === undefined ? '' : ` at line ${position.line + 1}, column ${position.col}`;
    fail(source, `YAML syntax error in the front matter${at}: ${error.message.replace(/ at line \d+, column \d+[\s\S]*$/, '')}`);
  }
  document ??= {};
  if (typeof document !== 'object' || Array.isArray(document))
    fail(source, `the front matter must be a YAML mapping holding name and description, got ${describeValue(document, 'json')}`);

  const parsed = SkillFrontMatterSchema.safeParse(document, { reportInput: true });
  if (!parsed.success) {
    const problems = problemLines(parsed.error);
    return problems.length === 1 ? fail(source, problems[0] ?? '') : fail(source, `the front matter has ${problems.length} problems:`, problems);
  }
  const front = parsed.data;
  return {
    name: front.name,
    description: front.description,
    version: front.metadata?.['version'] ?? DEFAULT_SKILL_VERSION,
    instructions: lines
      .slice(end + 1)
      .join('\n')
      .trim(),
    dependencies: front.dependencies.map((dependency, index) => parseSkillReference(dependency, `${source}: dependencies[${index}]`)),
  };
}

/**
 * Reads the skill in `dir` (its `SKILL.md`) as one of `org`'s. The folder must hold only files
 * and folders, as a package's does.
 * @throws {PackageError} naming the folder when it or its SKILL.md is missing, or holds a
 *   symbolic link, a FIFO, a socket or a device (named, with what it is); the file when SKILL.md
 *   is invalid.
 */
export async function loadSkillFolder(dir: string, org: string): Promise<LoadedSkill> {
  if (!ORG.test(org)) throw new PackageError(`cannot load skill "${dir}": the org ${JSON.stringify(org)} must be lowercase letters, digits and "-"`);
  const path = join(dir, 'SKILL.md');
  const info = await lstat(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  });
  if (info === undefined) {
    const folder = await stat(dir).catch(() => undefined);
    fail(
      dir,
      folder?.isDirectory() === true
        ? 'SKILL.md is missing (a skill is a folder holding SKILL.md: front matter with name and description, then instructions)'
        : 'no such folder (a skill is a folder holding SKILL.md)',
    );
  }
  // A link would put a file from outside the skill (a secret) into the prompt and the install.
  const listing = await listPackageFolder(dir);
  if (!listing.ok) fail(dir, specialEntryProblem(listing.special, 'skill'));
  if (!info.isFile()) fail(dir, 'SKILL.md is not a file');
  if (info.size > MAX_SKILL_BYTES) fail(dir, `SKILL.md is larger than ${MAX_SKILL_BYTES} bytes`);
  const skill = parseSkillFile(await readFile(path, 'utf8'), path);
  return { ...skill, reference: { org, name: skill.name, version: skill.version, qualified: `@${org}/skills/${skill.name}` }, dir };
}

/** Who asked for a skill, as messages name them. */
const ROOTS = "the agent's skills";

/**
 * The roots and all their dependencies, transitively, each once (by qualified name),
 * dependencies before dependants. Where one requirer pins a version and another asks for the
 * latest, the pinned version is taken.
 * @param find Loads the skill a reference names (the pinned version, or the latest).
 * @throws {PackageError} for a dependency cycle (its path named), two different pinned versions
 *   of one skill (both requirers named), or a skill whose SKILL.md is not the one asked for.
 * @example
 * // a → b, a → c, b → d, c → d
 * await resolveSkillClosure([a], find) // [d, b, c, a]
 */
export async function resolveSkillClosure<Skill extends LoadedSkill>(
  roots: readonly SkillReference[],
  find: (reference: SkillReference) => Promise<Skill>,
): Promise<Skill[]> {
  const pins = new Map<string, { version: string; by: string }>();
  const cache = new Map<string, Skill>();

  const load = async (reference: SkillReference, requiredBy: string): Promise<Skill> => {
    const key = referenceText(reference);
    const cached = cache.get(key);
    if (cached !== undefined) return cached;
    let skill: Skill;
    try {
      skill = await find(reference);
    } catch (error) {
      if (error instanceof PackageError && requiredBy !== ROOTS)
        throw new PackageError(`${error.message} (required by ${requiredBy})`, { details: error.details, cause: error });
      throw error;
    }
    if (skill.reference.qualified !== reference.qualified || (reference.version !== undefined && skill.version !== reference.version)) {
      throw new PackageError(
        `cannot resolve skill "${key}" (required by ${requiredBy}): the folder found, "${skill.dir}", holds "${referenceText(skill.reference)}"`,
      );
    }
    cache.set(key, skill);
    return skill;
  };

  // One depth-first walk; true when a pin turned up for a skill already taken at another
  // version, and the walk must start again with that pin. Pins only grow, so this ends.
  const walk = async (order: Skill[]): Promise<boolean> => {
    const taken = new Map<string, Skill>();
    const visit = async (reference: SkillReference, requiredBy: string, path: readonly string[]): Promise<boolean> => {
      const { qualified, version } = reference;
      if (version !== undefined) {
        const pin = pins.get(qualified);
        if (pin === undefined) {
          pins.set(qualified, { version, by: requiredBy });
          const current = taken.get(qualified);
          if (current !== undefined && current.version !== version) return true;
        } else if (pin.version !== version) {
          throw new PackageError(
            `cannot resolve skills: "${qualified}" is required at version ${pin.version} by ${pin.by} and at version ${version} by ${requiredBy}; pin the same version in both, or leave one unpinned`,
            { details: { skill: qualified, versions: [pin.version, version], requiredBy: [pin.by, requiredBy] } },
          );
        }
      }
      if (path.includes(qualified)) {
        const cycle = [...path.slice(path.indexOf(qualified)), qualified];
        throw new PackageError(`skill dependency cycle: ${cycle.join(' → ')}; remove one of these dependencies`, { details: { cycle } });
      }
      if (taken.has(qualified)) return false;
      const pin = pins.get(qualified);
      const skill = await load(
        pin === undefined ? { org: reference.org, name: reference.name, qualified } : { ...reference, version: pin.version },
        requiredBy,
      );
      taken.set(qualified, skill);
      for (const dependency of skill.dependencies) {
        if (await visit(dependency, referenceText(skill.reference), [...path, qualified])) return true;
      }
      order.push(skill);
      return false;
    };
    for (const root of roots) if (await visit(root, ROOTS, [])) return true;
    return false;
  };

  for (;;) {
    const order: Skill[] = [];
    if (!(await walk(order))) return order;
  }
}

/**
 * The text added to an activity's system prompt for its skills: for each, a heading with its
 * name, its description, then its instructions. Empty for no skills.
 */
export function skillsPrompt(skills: readonly LoadedSkill[]): string {
  return skills
    .map((skill) => [`# Skill: ${skill.name}`, skill.description.trim(), skill.instructions].filter((part) => part !== '').join('\n\n'))
    .join('\n\n');
}

/**
 * Orders versions by their dot-separated parts, numerically where the parts are numbers
 * ("1.10.0" after "1.9.0"); a part with a suffix comes before the bare number ("1.0.0-beta"
 * before "1.0.0"). Negative when `first` is lower.
 */
export function compareSkillVersions(first: string, second: string): number {
  const a = first.split('.');
  const b = second.split('.');
  for (let index = 0; index < Math.max(a.length, b.length); index += 1) {
    const left = /^(\d*)(.*)$/.exec(a[index] ?? '0') ?? [];
    const right = /^(\d*)(.*)$/.exec(b[index] ?? '0') ?? [];
    const [, leftNumber = '', leftRest = ''] = left;
    const [, rightNumber = '', rightRest = ''] = right;
    if (leftNumber !== '' && rightNumber !== '' && Number(leftNumber) !== Number(rightNumber)) return Number(leftNumber) - Number(rightNumber);
    if ((leftNumber === '') !== (rightNumber === '')) return leftNumber === '' ? -1 : 1;
    if (leftRest !== rightRest) {
      if (leftRest === '') return 1;
      if (rightRest === '') return -1;
      return leftRest < rightRest ? -1 : 1;
    }
  }
  return 0;
}

/**
 * Where a skill's version is installed: `<skillsDir>/<org>/<name>/<version>`.
 * @throws {PackageError} when its org, name or version cannot name a folder.
 */
export function installedSkillFolder(skillsDir: string, skill: LoadedSkill): string {
  const { org } = skill.reference;
  if (!ORG.test(org) || !SKILL_NAME.test(skill.name) || !VERSION.test(skill.version)) {
    throw new PackageError(`cannot install skill "${referenceText(skill.reference)}": its org, name or version cannot name a folder`);
  }
  return join(skillsDir, org, skill.name, skill.version);
}

/** What to do to use a new copy in place of the installed one: remove that one first. */
function removalFix(target: string, installedBy: string | null): string {
  // A skill installed by its own code records the code; a package's install, the package's slug.
  const uninstall =
    installedBy === null
      ? ''
      : /^SKIL-/.test(installedBy)
        ? ` (installed by its code, loom package install ${installedBy})`
        : ` (package "${installedBy}" installed it: uninstall it unless you trust it, loom package uninstall ${installedBy})`;
  return `delete the installed copy "${target}"${uninstall}, then install again`;
}

/**
 * Whether `target` holds this skill already: false when nothing is there, true when the same
 * files are.
 * @throws {PackageError} when another copy of the version is there; for a skill whose origin is
 *   known, naming where each copy came from and each digest.
 */
async function holdsSameCopy(skillsDir: string, target: string, skill: LoadedSkill | SourcedSkill): Promise<boolean> {
  if ((await lstat(target).catch(() => undefined)) === undefined) return false;
  // An installed copy that cannot be read as a skill folder (a link in it) is another copy too.
  const installed = await packageFolderDigest(target, 'skill').catch((error: unknown) => {
    if (error instanceof PackageError) return undefined;
    throw error;
  });
  const digest = 'digest' in skill ? skill.digest : await packageFolderDigest(skill.dir, 'skill');
  if (installed === digest) return true;
  const name = referenceText(skill.reference);
  if (!('origin' in skill)) {
    throw new PackageError(
      `cannot install skill "${name}": another copy of ${name} is installed already ("${target}"), and a version, once installed, is not replaced; give this copy another version (metadata.version in its SKILL.md), or leave it out of the package to use the installed one`,
      { details: { skill: name, installed: target } },
    );
  }
  const recorded =
    installed === undefined
      ? { origin: { kind: 'unknown', reason: 'it cannot be read as a skill folder' } as const, installedBy: null }
      : await readSkillOrigin(skillsDir, skill, installed);
  const fix =
    skill.origin.kind === 'registry'
      ? `if you trust registry "${skill.origin.registry}", ${removalFix(target, recorded.installedBy)}; otherwise do not install this package`
      : `give this copy another version (metadata.version in its SKILL.md), or leave it out of the package to use the installed one; or, to use this copy, ${removalFix(target, recorded.installedBy)}`;
  throw new PackageError(
    `cannot install skill "${name}": another copy of ${name} is installed already ("${target}", ${describeSkillOrigin(recorded.origin)}, digest ${installed ?? 'unreadable'}), and this copy, ${describeSkillOrigin(skill.origin)}, holds other files (digest ${digest}); a version, once installed, is not replaced, nor used in place of other files: ${fix}`,
    { details: { skill: name, installed: { folder: target, digest: installed ?? null, origin: recorded.origin }, wanted: { digest, origin: skill.origin } } },
  );
}

/**
 * Checks that the skill can be installed: its version is not installed yet, or is installed
 * with the same files.
 * @throws {PackageError} naming the skill when another copy of its version is installed: a
 *   version, once installed, is not replaced (packages installed later that name it would get
 *   the other copy's instructions), and for a {@link SourcedSkill} both origins and digests.
 */
export async function checkSkillInstallable(skillsDir: string, skill: LoadedSkill | SourcedSkill): Promise<void> {
  const target = installedSkillFolder(skillsDir, skill);
  if (resolve(skill.dir) !== resolve(target)) await holdsSameCopy(skillsDir, target, skill);
}

/**
 * Copies the skill's folder to `<skillsDir>/<org>/<name>/<version>/` and returns that folder, and
 * whether this call made it. The copy is made in a hidden sibling, then renamed into place, so a
 * reader sees a whole copy or none. An installed copy of the same version with the same files is
 * kept as it is. For a {@link SourcedSkill} with `record`, where the copy came from is recorded
 * when this call makes it ({@link skillOriginPath}); a copy kept keeps its first record.
 * @throws {PackageError} when another copy of the version is installed (see {@link checkSkillInstallable}).
 */
export async function installSkill(
  skillsDir: string,
  skill: LoadedSkill | SourcedSkill,
  record?: { installedBy: string; installedAt: number },
): Promise<{ folder: string; created: boolean }> {
  const target = installedSkillFolder(skillsDir, skill);
  if (resolve(skill.dir) === resolve(target) || (await holdsSameCopy(skillsDir, target, skill))) return { folder: target, created: false };
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  // Hidden names never look like versions, so findInstalledSkill passes over them.
  const fresh = join(parent, `.${skill.version}.installing-${randomUUID()}`);
  try {
    await copyPackageFolder(skill.dir, fresh, 'skill');
    try {
      await rename(fresh, target);
    } catch (error) {
      // Another install put the version in place meanwhile: the same files are fine.
      const code = (error as NodeJS.ErrnoException).code;
      if ((code === 'ENOTEMPTY' || code === 'EEXIST') && (await holdsSameCopy(skillsDir, target, skill))) return { folder: target, created: false };
      throw error;
    }
  } finally {
    await rm(fresh, { recursive: true, force: true });
  }
  if ('origin' in skill && record !== undefined) {
    try {
      await writeSkillOrigin(skillsDir, skill, record);
    } catch (error) {
      // A copy without its record would be taken as of unknown origin: none at all is plainer.
      await rm(target, { recursive: true, force: true });
      throw error;
    }
  }
  return { folder: target, created: true };
}

/**
 * Every skill installed in `skillsDir` (`<org>/<name>/`), unversioned, sorted by qualified name.
 * Folders that cannot be an org's or a skill's (hidden ones, such as `.origins`) are passed over;
 * a skill folder with no version in it is listed, and {@link findInstalledSkill} finds none.
 */
export async function listInstalledSkills(skillsDir: string): Promise<SkillReference[]> {
  const folders = async (dir: string, pattern: RegExp): Promise<string[]> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    });
    return entries.filter((entry) => entry.isDirectory() && pattern.test(entry.name)).map((entry) => entry.name);
  };
  const found: SkillReference[] = [];
  for (const org of await folders(skillsDir, ORG)) {
    for (const name of await folders(join(skillsDir, org), SKILL_NAME)) found.push({ org, name, qualified: `@${org}/skills/${name}` });
  }
  return found.sort((first, second) => (first.qualified < second.qualified ? -1 : first.qualified > second.qualified ? 1 : 0));
}

/**
 * An installed skill: the pinned version, or the highest installed version when none is pinned
 * (see {@link compareSkillVersions}); undefined when none is installed.
 * @throws {PackageError} when the installed SKILL.md is invalid.
 */
export async function findInstalledSkill(skillsDir: string, reference: SkillReference): Promise<LoadedSkill | undefined> {
  // Checked again, since the parts become a path.
  const checked = parseSkillReference(`@${reference.org}/skills/${reference.name}${reference.version === undefined ? '' : `@${reference.version}`}`);
  const folder = join(skillsDir, checked.org, checked.name);
  if (checked.version !== undefined) {
    const dir = join(folder, checked.version);
    const installed = await stat(join(dir, 'SKILL.md')).catch(() => undefined);
    return installed === undefined ? undefined : loadSkillFolder(dir, checked.org);
  }
  const entries = await readdir(folder, { withFileTypes: true }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  });
  const versions = entries
    .filter((entry) => entry.isDirectory() && VERSION.test(entry.name))
    .map((entry) => entry.name)
    .sort(compareSkillVersions)
    .reverse();
  for (const version of versions) {
    const dir = join(folder, version);
    if ((await stat(join(dir, 'SKILL.md')).catch(() => undefined)) !== undefined) return loadSkillFolder(dir, checked.org);
  }
  return undefined;
}
