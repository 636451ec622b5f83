import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PackageError } from '../../src/errors/index.ts';
import {
  findInstalledSkill,
  installSkill,
  type LoadedSkill,
  loadSkillFolder,
  parseSkillFile,
  parseSkillReference,
  resolveSkillClosure,
  type SkillReference,
  skillsPrompt,
} from '../../src/packages/skills.ts';
import { rejectionMessage } from '../support/rejection.ts';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loom-skills-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A SKILL.md with the given front matter lines and body. */
function skillMd(name: string, options: { version?: string; dependencies?: string[]; body?: string; extra?: string } = {}): string {
  const lines = ['---', `name: ${name}`, `description: The ${name} skill.`];
  if (options.version !== undefined) lines.push('metadata:', `  version: "${options.version}"`);
  if (options.dependencies !== undefined) lines.push('dependencies:', ...options.dependencies.map((dependency) => `  - "${dependency}"`));
  if (options.extra !== undefined) lines.push(options.extra);
  lines.push('---', '', options.body ?? `Do what ${name} does.`, '');
  return lines.join('\n');
}

/** Writes a skill folder and returns its path. */
async function writeSkill(folder: string, text: string, files: Record<string, string> = {}): Promise<string> {
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'SKILL.md'), text);
  for (const [file, content] of Object.entries(files)) await writeFile(join(folder, file), content);
  return folder;
}

/** A registry-like folder `<dir>/library/<org>/<name>/<version>/` read by findInstalledSkill. */
async function librarySkill(org: string, name: string, version: string, dependencies: string[] = []): Promise<void> {
  await writeSkill(join(dir, 'library', org, name, version), skillMd(name, dependencies.length === 0 ? { version } : { version, dependencies }));
}

async function findInLibrary(reference: SkillReference): Promise<LoadedSkill> {
  const skill = await findInstalledSkill(join(dir, 'library'), reference);
  if (skill === undefined) throw new PackageError(`cannot find skill "${reference.qualified}"`);
  return skill;
}

const refs = (...texts: string[]): SkillReference[] => texts.map((text) => parseSkillReference(text));
const namesOf = (skills: readonly LoadedSkill[]): string[] => skills.map((skill) => `${skill.reference.qualified}@${skill.version}`);

const messageOf = (promise: Promise<unknown>): Promise<string> => rejectionMessage(promise, PackageError);

function messageOfSync(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(PackageError);
    return (error as PackageError).message;
  }
  throw new Error('expected a PackageError, nothing was thrown');
}

describe('parseSkillReference()', () => {
  it('reads the org, the name and the pinned version, if any', () => {
    expect(parseSkillReference('@nebo/skills/web-scraper')).toEqual({ org: 'nebo', name: 'web-scraper', qualified: '@nebo/skills/web-scraper' });
    expect(parseSkillReference('@nebo/skills/web-scraper@1.2.0')).toEqual({
      org: 'nebo',
      name: 'web-scraper',
      version: '1.2.0',
      qualified: '@nebo/skills/web-scraper',
    });
  });

  it.each([
    'nebo/skills/web-scraper',
    '@nebo/agents/web-scraper',
    '@Nebo/skills/web-scraper',
    '@nebo/skills/Web_Scraper',
    '@nebo/skills/',
    '@nebo/skills/web-scraper@',
    '@nebo/skills/web-scraper@..',
    '',
  ])('refuses %j, naming where it was, the text and the expected form', (text) => {
    const message = messageOfSync(() => parseSkillReference(text, 'agent.json: skills[2]'));
    expect(message).toBe(
      `agent.json: skills[2]: expected a skill reference such as "@org/skills/name" or "@org/skills/name@1.0.0" (org and name of lowercase letters, digits and "-"), got ${JSON.stringify(text)}`,
    );
  });
});

describe('parseSkillFile() and loadSkillFolder()', () => {
  it('reads name, description, version from metadata, the body as instructions and the dependencies', async () => {
    const folder = await writeSkill(
      join(dir, 'note-taker'),
      [
        '---',
        'name: note-taker',
        'description: >-',
        '  Keeps structured notes.',
        '  Use it when asked to write something down.',
        'license: MIT',
        'compatibility: Needs file access',
        'allowed-tools: file_read file_write',
        'metadata:',
        '  version: "1.2.0"',
        '  author: nebo',
        'dependencies:',
        '  - "@nebo/skills/markdown"',
        '  - "@acme/skills/dates@2.0.0"',
        '---',
        '',
        '# Taking notes',
        '',
        'Write each note as a bullet list.',
        '',
      ].join('\n'),
      { 'template.md': '- item\n' },
    );
    const skill = await loadSkillFolder(folder, 'nebo');
    expect(skill).toEqual({
      reference: { org: 'nebo', name: 'note-taker', version: '1.2.0', qualified: '@nebo/skills/note-taker' },
      name: 'note-taker',
      description: 'Keeps structured notes. Use it when asked to write something down.',
      version: '1.2.0',
      instructions: '# Taking notes\n\nWrite each note as a bullet list.',
      dependencies: [
        { org: 'nebo', name: 'markdown', qualified: '@nebo/skills/markdown' },
        { org: 'acme', name: 'dates', version: '2.0.0', qualified: '@acme/skills/dates' },
      ],
      dir: folder,
    });
  });

  it('gives a skill without metadata.version the version 0.0.0 and no dependencies', () => {
    const skill = parseSkillFile('---\nname: tiny\ndescription: Small.\n---\nBody\n', 'tiny/SKILL.md');
    expect(skill).toEqual({ name: 'tiny', description: 'Small.', version: '0.0.0', instructions: 'Body', dependencies: [] });
  });

  it('refuses a SKILL.md without front matter, saying what it must start with', () => {
    const message = messageOfSync(() => parseSkillFile('# Note taker\n\nTake notes.\n', 'skills/note-taker/SKILL.md'));
    expect(message).toMatch(/^cannot load skill "skills\/note-taker\/SKILL\.md": SKILL\.md must start with "---" front matter holding name and description/);
  });

  it('refuses front matter with no closing "---" line', () => {
    const message = messageOfSync(() => parseSkillFile('---\nname: x\ndescription: y\n', 'x/SKILL.md'));
    expect(message).toMatch(/^cannot load skill "x\/SKILL\.md": the front matter has no closing "---" line/);
  });

  it('refuses a missing name, naming the file and the field', () => {
    const message = messageOfSync(() => parseSkillFile('---\ndescription: Does things.\n---\nBody\n', 'x/SKILL.md'));
    expect(message).toBe('cannot load skill "x/SKILL.md": name: missing, expected a string');
  });

  it('refuses an unknown key with a did-you-mean', () => {
    const message = messageOfSync(() => parseSkillFile('---\nname: note-taker\ndescripton: Keeps notes.\n---\nBody\n', 'x/SKILL.md'));
    expect(message).toContain('cannot load skill "x/SKILL.md": the front matter has 2 problems:');
    expect(message).toContain('  descripton: unknown key, did you mean "description"?');
    expect(message).toContain('  description: missing, expected a string');
  });

  it('refuses a name that is not lowercase letters, digits and single hyphens', () => {
    const message = messageOfSync(() => parseSkillFile('---\nname: Note--Taker\ndescription: Keeps notes.\n---\n', 'x/SKILL.md'));
    expect(message).toBe(
      'cannot load skill "x/SKILL.md": name: expected lowercase letters, digits and single hyphens, not starting or ending with a hyphen, such as "note-taker", got "Note--Taker"',
    );
  });

  it('refuses a bad dependency, naming its index', () => {
    const message = messageOfSync(() => parseSkillFile(skillMd('x', { dependencies: ['@nebo/skills/ok', 'web-scraper'] }), 'x/SKILL.md'));
    expect(message).toBe(
      'cannot load skill "x/SKILL.md": dependencies[1]: expected a skill reference such as "@org/skills/name" or "@org/skills/name@1.0.0" (org and name of lowercase letters, digits and "-"), got "web-scraper"',
    );
  });

  it('asks for quotes around a version YAML reads as a number', () => {
    const message = messageOfSync(() => parseSkillFile('---\nname: x\ndescription: y\nmetadata:\n  version: 1.5\n---\n', 'x/SKILL.md'));
    expect(message).toBe('cannot load skill "x/SKILL.md": metadata.version: expected a string, got 1.5 (YAML reads it as a number; put it in quotes: "1.5")');
  });

  it('refuses a version that cannot name a folder', () => {
    const message = messageOfSync(() => parseSkillFile('---\nname: x\ndescription: y\nmetadata:\n  version: "../../etc"\n---\n', 'x/SKILL.md'));
    expect(message).toBe('cannot load skill "x/SKILL.md": metadata.version: expected a version such as "1.0.0", got "../../etc"');
  });

  it('reports a YAML syntax error with its line in the file', () => {
    const message = messageOfSync(() => parseSkillFile('---\nname: x\ndescription: a: b\n---\n', 'x/SKILL.md'));
    expect(message).toBe(
      'cannot load skill "x/SKILL.md": YAML syntax error in the front matter at line 3, column 14: Nested mappings are not allowed in compact mappings',
    );
  });

  it('refuses a folder without SKILL.md, naming the folder', async () => {
    await mkdir(join(dir, 'empty'));
    expect(await messageOf(loadSkillFolder(join(dir, 'empty'), 'nebo'))).toBe(
      `cannot load skill "${join(dir, 'empty')}": SKILL.md is missing (a skill is a folder holding SKILL.md: front matter with name and description, then instructions)`,
    );
    expect(await messageOf(loadSkillFolder(join(dir, 'nowhere'), 'nebo'))).toBe(
      `cannot load skill "${join(dir, 'nowhere')}": no such folder (a skill is a folder holding SKILL.md)`,
    );
  });
});

describe('resolveSkillClosure()', () => {
  it('takes each skill of a diamond once, dependencies before dependants', async () => {
    await librarySkill('a', 'a', '1.0.0', ['@a/skills/b', '@a/skills/c']);
    await librarySkill('a', 'b', '1.0.0', ['@a/skills/d']);
    await librarySkill('a', 'c', '1.0.0', ['@a/skills/d']);
    await librarySkill('a', 'd', '1.0.0');
    const found: string[] = [];
    const skills = await resolveSkillClosure(refs('@a/skills/a'), (reference) => {
      found.push(reference.qualified);
      return findInLibrary(reference);
    });
    expect(namesOf(skills)).toEqual(['@a/skills/d@1.0.0', '@a/skills/b@1.0.0', '@a/skills/c@1.0.0', '@a/skills/a@1.0.0']);
    expect(found.filter((name) => name === '@a/skills/d')).toHaveLength(1);
  });

  it('takes the latest version unless one is pinned, and the pinned one when another requirer leaves it open', async () => {
    await librarySkill('a', 'd', '1.0.0');
    await librarySkill('a', 'd', '1.10.0');
    await librarySkill('a', 'd', '1.9.0');
    await librarySkill('a', 'b', '1.0.0', ['@a/skills/d@1.9.0']);
    expect(namesOf(await resolveSkillClosure(refs('@a/skills/d'), findInLibrary))).toEqual(['@a/skills/d@1.10.0']);
    expect(namesOf(await resolveSkillClosure(refs('@a/skills/d', '@a/skills/b'), findInLibrary))).toEqual(['@a/skills/d@1.9.0', '@a/skills/b@1.0.0']);
  });

  it('refuses a dependency cycle, naming its path', async () => {
    await librarySkill('a', 'w', '1.0.0', ['@a/skills/x']);
    await librarySkill('a', 'x', '1.0.0', ['@a/skills/y']);
    await librarySkill('a', 'y', '1.0.0', ['@a/skills/x']);
    expect(await messageOf(resolveSkillClosure(refs('@a/skills/w'), findInLibrary))).toBe(
      'skill dependency cycle: @a/skills/x → @a/skills/y → @a/skills/x; remove one of these dependencies',
    );
  });

  it('refuses a skill that depends on itself', async () => {
    await librarySkill('a', 'x', '1.0.0', ['@a/skills/x']);
    expect(await messageOf(resolveSkillClosure(refs('@a/skills/x'), findInLibrary))).toContain('skill dependency cycle: @a/skills/x → @a/skills/x');
  });

  it('refuses two different pinned versions of one skill, naming both requirers', async () => {
    await librarySkill('a', 'b', '1.0.0', ['@a/skills/d@1.0.0']);
    await librarySkill('a', 'c', '3.0.0', ['@a/skills/d@2.0.0']);
    await librarySkill('a', 'd', '1.0.0');
    await librarySkill('a', 'd', '2.0.0');
    expect(await messageOf(resolveSkillClosure(refs('@a/skills/b', '@a/skills/c'), findInLibrary))).toBe(
      'cannot resolve skills: "@a/skills/d" is required at version 1.0.0 by @a/skills/b@1.0.0 and at version 2.0.0 by @a/skills/c@3.0.0; pin the same version in both, or leave one unpinned',
    );
  });

  it('says which skill needs a dependency that cannot be found', async () => {
    await librarySkill('a', 'b', '1.0.0', ['@a/skills/missing']);
    expect(await messageOf(resolveSkillClosure(refs('@a/skills/b'), findInLibrary))).toBe(
      'cannot find skill "@a/skills/missing" (required by @a/skills/b@1.0.0)',
    );
  });

  it('refuses a folder whose SKILL.md is not the skill asked for', async () => {
    const folder = await writeSkill(join(dir, 'wrong'), skillMd('other'));
    const message = await messageOf(resolveSkillClosure(refs('@a/skills/b'), () => loadSkillFolder(folder, 'a')));
    expect(message).toBe(`cannot resolve skill "@a/skills/b" (required by the agent's skills): the folder found, "${folder}", holds "@a/skills/other@0.0.0"`);
  });
});

describe('skillsPrompt()', () => {
  it('gives each skill a heading with its name, its description, then its instructions', async () => {
    const first = await loadSkillFolder(await writeSkill(join(dir, 'one'), skillMd('one', { body: 'Step one.' })), 'a');
    const second = await loadSkillFolder(await writeSkill(join(dir, 'two'), skillMd('two', { body: 'Step two.' })), 'a');
    expect(skillsPrompt([first, second])).toBe('# Skill: one\n\nThe one skill.\n\nStep one.\n\n# Skill: two\n\nThe two skill.\n\nStep two.');
    expect(skillsPrompt([])).toBe('');
  });
});

describe('installSkill() and findInstalledSkill()', () => {
  it('installs copies by version, then finds the latest or the pinned one', async () => {
    const skillsDir = join(dir, 'installed');
    const older = await loadSkillFolder(
      await writeSkill(join(dir, 'src-1'), skillMd('notes', { version: '1.9.0', body: 'Old way.' }), { 'extra.txt': 'old' }),
      'nebo',
    );
    const newer = await loadSkillFolder(
      await writeSkill(join(dir, 'src-2'), skillMd('notes', { version: '1.10.0', body: 'New way.' }), { 'extra.txt': 'new' }),
      'nebo',
    );
    expect(await installSkill(skillsDir, newer)).toEqual({ folder: join(skillsDir, 'nebo', 'notes', '1.10.0'), created: true });
    expect(await installSkill(skillsDir, older)).toEqual({ folder: join(skillsDir, 'nebo', 'notes', '1.9.0'), created: true });
    expect(await readFile(join(skillsDir, 'nebo', 'notes', '1.9.0', 'extra.txt'), 'utf8')).toBe('old');

    const latest = await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/notes'));
    expect(latest?.version).toBe('1.10.0');
    expect(latest?.instructions).toBe('New way.');
    expect(latest?.dir).toBe(join(skillsDir, 'nebo', 'notes', '1.10.0'));

    const pinned = await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/notes@1.9.0'));
    expect(pinned?.version).toBe('1.9.0');
    expect(pinned?.instructions).toBe('Old way.');

    expect(await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/notes@2.0.0'))).toBeUndefined();
    expect(await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/other'))).toBeUndefined();
  });

  it('refuses another copy of an installed version, naming it, and keeps the installed one; the same copy again is kept as it is', async () => {
    const skillsDir = join(dir, 'installed');
    const first = await loadSkillFolder(
      await writeSkill(join(dir, 'first'), skillMd('notes', { version: '1.0.0', body: 'First.' }), { 'extra.txt': 'x' }),
      'nebo',
    );
    const second = await loadSkillFolder(
      await writeSkill(join(dir, 'second'), skillMd('notes', { version: '1.0.0', body: 'Second.' }), { 'extra.txt': 'x' }),
      'nebo',
    );
    const same = await loadSkillFolder(
      await writeSkill(join(dir, 'same'), skillMd('notes', { version: '1.0.0', body: 'First.' }), { 'extra.txt': 'x' }),
      'nebo',
    );
    const { folder: target } = await installSkill(skillsDir, first);
    expect(await messageOf(installSkill(skillsDir, second))).toBe(
      `cannot install skill "@nebo/skills/notes@1.0.0": another copy of @nebo/skills/notes@1.0.0 is installed already ("${target}"), and a version, once installed, is not replaced; give this copy another version (metadata.version in its SKILL.md), or leave it out of the package to use the installed one`,
    );
    expect((await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/notes')))?.instructions).toBe('First.');
    expect(await installSkill(skillsDir, same)).toEqual({ folder: target, created: false });
    const installed = await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/notes@1.0.0'));
    expect(installed).toBeDefined();
    expect(await installSkill(skillsDir, installed as NonNullable<typeof installed>)).toEqual({ folder: target, created: false });
    // No scratch folders left beside it.
    expect(await readdir(join(skillsDir, 'nebo', 'notes'))).toEqual(['1.0.0']);
    expect((await findInstalledSkill(skillsDir, parseSkillReference('@nebo/skills/notes')))?.instructions).toBe('First.');
  });

  it('loadSkillFolder() refuses a skill holding a symbolic link, naming the file relative to the skill', async () => {
    const secret = join(dir, 'secret.env');
    await writeFile(secret, 'TOKEN=hunter2\n');
    const folder = await writeSkill(join(dir, 'linked'), skillMd('linked', { body: 'Read reference.md.' }));
    await mkdir(join(folder, 'docs'));
    await symlink(secret, join(folder, 'docs', 'reference.md'));
    expect(await messageOf(loadSkillFolder(folder, 'nebo'))).toBe(
      `cannot load skill "${folder}": "docs/reference.md" is a symbolic link; a skill holds only files and folders (put a copy of what it points to in its place)`,
    );
  });
});
