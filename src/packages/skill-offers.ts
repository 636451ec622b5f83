import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileState, keptWhileUnchanged, statsState } from '../config/index.ts';
import type { OfferedSkills } from '../kernel/index.ts';
import { offerInstalledSkills } from './offer-skills.ts';

/** How many allowlists' offers are kept (one per distinct `skills` list of the installation's agents). */
const KEPT_OFFERS = 64;

/**
 * The state of the skills folder as an offer depends on it: the path, inode and times of every
 * folder under `dir`, linked folders followed (a folder's times change when an entry is added,
 * removed or renamed in it, a link too), and of every SKILL.md: a few `stat`s and `readdir`s of
 * small folders, where reading the skills means parsing every SKILL.md.
 */
function skillsFolderState(dir: string): string {
  const parts: string[] = [];
  // Folders already walked (a link may lead back to one), by device and inode.
  const walked = new Set<string>();
  const walk = (path: string): void => {
    // `stat` follows links: a linked org, skill or version folder is read through, as the skills are.
    const info = statSync(path, { throwIfNoEntry: false });
    if (info === undefined) {
      parts.push(`${path} -`);
      return;
    }
    parts.push(`${path} ${statsState(info)}`);
    if (!info.isDirectory() || walked.has(`${info.dev}:${info.ino}`)) return;
    walked.add(`${info.dev}:${info.ino}`);
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      if (entry.isDirectory() || entry.isSymbolicLink()) walk(join(path, entry.name));
      else if (entry.name === 'SKILL.md') parts.push(`${join(path, entry.name)} ${fileState(join(path, entry.name))}`);
    }
  };
  walk(dir);
  return parts.join('\n');
}

/**
 * What an allowlist offers of the skills installed in `skillsDir` (see `offerInstalledSkills`),
 * read again only when the folder changed (see `keptWhileUnchanged`): an agent's turn asks for
 * its skills every time, and a skill installed or edited while agents run is read at their next
 * turn.
 */
export function createSkillOffers(skillsDir: string): (allowlist: readonly string[]) => Promise<OfferedSkills> {
  return keptWhileUnchanged({
    read: (allowlist: readonly string[]) => offerInstalledSkills(skillsDir, allowlist),
    keyOf: (allowlist) => allowlist.join('\n'),
    stateOf: () => skillsFolderState(skillsDir),
    limit: KEPT_OFFERS,
  });
}
