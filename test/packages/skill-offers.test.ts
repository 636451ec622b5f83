import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSkillOffers } from '../../src/packages/index.ts';

let dir: string;
let skillsDir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loom-skill-offers-'));
  skillsDir = join(dir, 'skills');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Installs `@acme/skills/<name>` at `version` with that description, as the installer lays it out. */
async function install(name: string, description: string, version = '1.0.0'): Promise<string> {
  const folder = join(skillsDir, 'acme', name, version);
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, 'SKILL.md'),
    ['---', `name: ${name}`, `description: ${description}`, 'metadata:', `  version: "${version}"`, '---', '', `Do what ${name} does.`, ''].join('\n'),
  );
  return folder;
}

describe('an agent turn asks for its skills every time, and the skills folder is read again only when it changed', () => {
  it('gives the same offer while nothing changed', async () => {
    await install('notes', 'Takes notes.');
    const offers = createSkillOffers(skillsDir);

    const first = await offers([]);
    expect(first.skills.map((skill) => skill.skill)).toEqual(['@acme/skills/notes@1.0.0']);
    expect(await offers([])).toBe(first);
    // Another allowlist is its own offer.
    expect((await offers(['notes'])).skills.map((skill) => skill.skill)).toEqual(['@acme/skills/notes@1.0.0']);
  });

  it('sees a skill installed, a SKILL.md edited, a version added and a skill removed at the next call', async () => {
    const offers = createSkillOffers(skillsDir);
    // No folder yet: nothing offered.
    expect((await offers([])).skills).toEqual([]);

    const notes = await install('notes', 'Takes notes.');
    expect((await offers([])).skills.map((skill) => skill.description)).toEqual(['Takes notes.']);

    await writeFile(
      join(notes, 'SKILL.md'),
      ['---', 'name: notes', 'description: Keeps tidy notes, with dates.', 'metadata:', '  version: "1.0.0"', '---', '', 'Do it.', ''].join('\n'),
    );
    expect((await offers([])).skills.map((skill) => skill.description)).toEqual(['Keeps tidy notes, with dates.']);

    await install('notes', 'Takes notes, faster.', '1.1.0');
    expect((await offers([])).skills.map((skill) => skill.skill)).toEqual(['@acme/skills/notes@1.1.0']);

    await rename(join(skillsDir, 'acme', 'notes'), join(dir, 'notes-gone'));
    expect((await offers([])).skills).toEqual([]);
  });

  it('sees an edit in a skill folder linked into the skills folder (a working copy)', async () => {
    const copy = join(dir, 'work', 'notes');
    await mkdir(join(copy, '1.0.0'), { recursive: true });
    const write = (description: string): Promise<void> =>
      writeFile(
        join(copy, '1.0.0', 'SKILL.md'),
        ['---', 'name: notes', `description: ${description}`, 'metadata:', '  version: "1.0.0"', '---', '', 'Do it.', ''].join('\n'),
      );
    await write('Takes notes.');
    await mkdir(join(skillsDir, 'acme'), { recursive: true });
    await symlink(copy, join(skillsDir, 'acme', 'notes'));
    const offers = createSkillOffers(skillsDir);
    expect((await offers(['@acme/skills/notes'])).skills.map((skill) => skill.description)).toEqual(['Takes notes.']);

    await write('Takes notes in the working copy.');
    expect((await offers(['@acme/skills/notes'])).skills.map((skill) => skill.description)).toEqual(['Takes notes in the working copy.']);
  });

  it('refuses a skill whose folder got a link into it since it was last offered', async () => {
    const folder = await install('notes', 'Takes notes.');
    await mkdir(join(folder, 'refs'));
    const offers = createSkillOffers(skillsDir);
    expect((await offers([])).skills).toHaveLength(1);

    await writeFile(join(dir, 'secret.txt'), 'a secret');
    await symlink(join(dir, 'secret.txt'), join(folder, 'refs', 'secret.txt'));
    const after = await offers([]);
    expect(after.skills).toEqual([]);
    expect(after.problems.join('\n')).toContain('@acme/skills/notes');
  });
});
