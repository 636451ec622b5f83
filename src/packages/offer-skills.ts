import { join } from 'node:path';
import { PackageError } from '../errors/index.ts';
import { type OfferedSkill, type OfferedSkills, SKILLS_PROMPT_BUDGET_BYTES } from '../kernel/index.ts';
import {
  findInstalledSkill,
  listInstalledSkills,
  type LoadedSkill,
  parseSkillReference,
  resolveSkillClosure,
  type SkillReference,
  skillsPrompt,
} from './skills.ts';

/**
 * What a manifest's `skills` allowlist offers an agent of the skills installed in `skillsDir`
 * (`LOOM_HOME/skills/<org>/<name>/<version>/SKILL.md`), and the text for its system prompt
 * (see `src/kernel/agent-skills.ts`). Each entry is a qualified reference, `@org/skills/name`
 * (the latest installed version) or `@org/skills/name@version`, or a plain name, `name`, which
 * stands for the one org's skill of that name (two orgs with one: ambiguous, offered neither).
 * A named skill comes with the skills it depends on, each once, dependencies first. An empty
 * allowlist offers every installed skill (the latest version of each), by qualified name.
 *
 * The instructions go in whole, in that order, while they fit in `budgetBytes`; from the first
 * that does not, each is listed by name and description with a note that it was left out (none is
 * cut mid-file). A skill that cannot be offered is a problem in the answer, never an error.
 */
export async function offerInstalledSkills(skillsDir: string, allowlist: readonly string[], budgetBytes = SKILLS_PROMPT_BUDGET_BYTES): Promise<OfferedSkills> {
  const problems: string[] = [];
  const chosen = new Map<string, LoadedSkill>();
  const take = (skill: LoadedSkill): void => {
    if (!chosen.has(skill.reference.qualified)) chosen.set(skill.reference.qualified, skill);
  };
  let installed: SkillReference[] = [];
  try {
    installed = await listInstalledSkills(skillsDir);
  } catch (error) {
    problems.push(`cannot read the skills folder "${skillsDir}": ${error instanceof Error ? error.message : String(error)}`);
  }

  if (allowlist.length === 0) {
    for (const reference of installed) {
      try {
        const skill = await findInstalledSkill(skillsDir, reference);
        if (skill !== undefined) take(skill);
      } catch (error) {
        problems.push(`skill "${reference.qualified}" is installed but cannot be read, so it is left out: ${messageOf(error)}`);
      }
    }
  } else {
    const find = async (reference: SkillReference): Promise<LoadedSkill> => {
      const skill = await findInstalledSkill(skillsDir, reference);
      if (skill === undefined)
        throw new PackageError(
          `"${referenceText(reference)}" is not installed (looked in "${join(skillsDir, reference.org, reference.name, reference.version ?? '<version>')}")`,
        );
      return skill;
    };
    for (const entry of allowlist) {
      const root = rootOf(entry, installed, skillsDir);
      if (typeof root === 'string') {
        problems.push(`skill "${entry}" ${root}; ${FIX}`);
        continue;
      }
      try {
        for (const skill of await resolveSkillClosure([root], find)) take(skill);
      } catch (error) {
        problems.push(`skill "${entry}": ${messageOf(error)}; ${FIX}`);
      }
    }
  }
  return { ...composeSkillsPrompt([...chosen.values()], budgetBytes), problems, budget_bytes: budgetBytes };
}

/** What a person does about a skill the allowlist names that is not installed. */
const FIX =
  "install it with its code (loom package install SKIL-…) or with a package that brings it, or take it out of the manifest's skills; the agent runs without it";

/** The reference an allowlist entry stands for, or why it stands for none. */
function rootOf(entry: string, installed: readonly SkillReference[], skillsDir: string): SkillReference | string {
  if (entry.startsWith('@')) return parseSkillReference(entry, 'skills');
  const orgs = installed.filter((reference) => reference.name === entry);
  if (orgs.length === 1 && orgs[0] !== undefined) return orgs[0];
  if (orgs.length === 0) return `is not installed (looked for "${join(skillsDir, '<org>', entry)}" in every org)`;
  return `is ambiguous: ${orgs.map((reference) => reference.qualified).join(' and ')} are installed, so neither is offered; name one of them`;
}

function referenceText(reference: SkillReference): string {
  return reference.version === undefined ? reference.qualified : `${reference.qualified}@${reference.version}`;
}

function messageOf(error: unknown): string {
  if (error instanceof PackageError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/** The most skills left out that the prompt lists by name; the rest are counted. */
const LISTED_LEFT_OUT = 50;

/** The skills' text for the system prompt within `budgetBytes` (see {@link offerInstalledSkills}). */
export function composeSkillsPrompt(skills: readonly LoadedSkill[], budgetBytes: number): Pick<OfferedSkills, 'prompt' | 'skills'> {
  const whole: string[] = [];
  const offered: OfferedSkill[] = [];
  let used = 0;
  let full = false;
  for (const skill of skills) {
    const text = skillsPrompt([skill]);
    const size = Buffer.byteLength(text, 'utf8');
    full ||= used + size > budgetBytes;
    if (!full) {
      whole.push(text);
      used += size;
    }
    offered.push({ skill: `${skill.reference.qualified}@${skill.version}`, name: skill.name, description: skill.description, in_prompt: !full });
  }
  if (offered.length === 0) return { prompt: '', skills: [] };
  const parts = ["# Skills\n\nThese skills are installed for you. When a task fits a skill's description, follow its instructions.", ...whole];
  const leftOut = offered.filter((skill) => !skill.in_prompt);
  if (leftOut.length > 0) {
    const listed = leftOut.slice(0, LISTED_LEFT_OUT).map((skill) => `- ${skill.name} (${skill.skill}): ${skill.description.trim()}`);
    const more = leftOut.length > LISTED_LEFT_OUT ? [`- and ${leftOut.length - LISTED_LEFT_OUT} more`] : [];
    parts.push(
      [`[Skills left out: their instructions did not fit in the ${budgetBytes} bytes this prompt gives skills. They are:`, ...listed, ...more, ']'].join('\n'),
    );
  }
  return { prompt: parts.join('\n\n'), skills: offered };
}
