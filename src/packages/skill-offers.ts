import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { OfferedSkills } from '../kernel/index.ts';
import { offerInstalledSkills } from './offer-skills.ts';

/** How many allowlists' offers are kept (one per distinct `skills` list of the installation's agents). */
const KEPT_OFFERS = 64;

/**
 * The state of the skills folder as an offer depends on it: the path, inode and times of every
 * folder under `dir`, linked folders followed (a folder's times change when an entry is added,
 * removed or renamed in it, a link too), of every link, and of every SKILL.md (its size too). Read synchronously: a few `stat`s and
 * `readdir`s of small folders, where reading the skills means parsing every SKILL.md.
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
    parts.push(`${path} ${info.ino} ${info.mtimeMs} ${info.ctimeMs}`);
    if (!info.isDirectory() || walked.has(`${info.dev}:${info.ino}`)) return;
    walked.add(`${info.dev}:${info.ino}`);
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      if (entry.isDirectory() || entry.isSymbolicLink()) walk(join(path, entry.name));
      else if (entry.name === 'SKILL.md') {
        const file = statSync(join(path, entry.name), { throwIfNoEntry: false });
        parts.push(`${join(path, entry.name)} ${file?.ino ?? '-'} ${file?.mtimeMs ?? '-'} ${file?.ctimeMs ?? '-'} ${file?.size ?? '-'}`);
      }
    }
  };
  walk(dir);
  return parts.join('\n');
}

/**
 * What an allowlist offers of the skills installed in `skillsDir` (see `offerInstalledSkills`),
 * read again only when the folder changed: an agent's turn asks for its skills every time, and
 * a skill installed or edited while agents run is read at their next turn. A change is seen by
 * the folders' and SKILL.md files' inodes and times (two writes of a SKILL.md of the same size
 * within the file system's clock tick, a few milliseconds, look like one).
 */
export function createSkillOffers(skillsDir: string): (allowlist: readonly string[]) => Promise<OfferedSkills> {
  const offers = new Map<string, { state: string; offered: Promise<OfferedSkills> }>();
  return (allowlist) => {
    let state: string;
    try {
      state = skillsFolderState(skillsDir);
    } catch {
      // A folder that cannot be walked is read as it is, and its problem reported by the offer.
      return offerInstalledSkills(skillsDir, allowlist);
    }
    const key = allowlist.join('\n');
    const kept = offers.get(key);
    if (kept !== undefined && kept.state === state) return kept.offered;
    const offered = offerInstalledSkills(skillsDir, allowlist);
    offers.delete(key);
    offers.set(key, { state, offered });
    for (const oldest of offers.keys()) {
      if (offers.size <= KEPT_OFFERS) break;
      offers.delete(oldest);
    }
    // A failed read is not kept: the next turn tries again.
    void offered.catch(() => {
      if (offers.get(key)?.offered === offered) offers.delete(key);
    });
    return offered;
  };
}
