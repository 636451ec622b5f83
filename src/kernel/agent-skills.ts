import type { Manifest } from '../manifest/index.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import { systemPromptOf } from './identity-prompt.ts';

/**
 * An agent's skills (spec/01 `skills`, "Skill allowlist (empty = all)"): the installed skills
 * its manifest names, or all of them for `skills = []`, read into its system prompt within
 * {@link SKILLS_PROMPT_BUDGET_BYTES}. The host reads the skills folder (`runtime.skills`); the
 * kernel adds what it gives after the agent's own prompt, before the per-turn context, so the
 * prompt's prefix stays the same from turn to turn (prompt caching).
 */

/** The most of the skills' text read into one agent's system prompt, in bytes (32 KB). */
export const SKILLS_PROMPT_BUDGET_BYTES = 32 * 1024;

/** One skill an agent is offered. */
export interface OfferedSkill {
  /** `@org/skills/name@version`. */
  skill: string;
  name: string;
  description: string;
  /** False when the budget left its instructions out: the prompt lists it by name and description only. */
  in_prompt: boolean;
}

/** What an agent is offered of the installed skills, and what its allowlist names that cannot be offered. */
export interface OfferedSkills {
  /** The text added to the system prompt; empty when no skill is offered. */
  prompt: string;
  /** In the prompt's order: the allowlist's (each after the skills it depends on), or by qualified name for all. */
  skills: OfferedSkill[];
  /** Why a skill the allowlist names is not offered (not installed, ambiguous, unreadable), each naming it and the fix. */
  problems: string[];
  /** The budget the prompt was held to, in bytes. */
  budget_bytes: number;
}

/**
 * The system prompt of an agent's own turns (a message, a wake-up, a code or typed agent's
 * turn): {@link systemPromptOf}, then its skills. A package activity's turn has its activity's
 * skills instead (spec/04) and does not use this.
 */
export async function agentSystemPrompt(runtime: Pick<AgentRuntime, 'identityFiles' | 'skills'>, manifest: Manifest, workspace: string): Promise<string> {
  const base = await systemPromptOf(runtime, manifest, workspace);
  if (runtime.skills === undefined) return base;
  const { prompt } = await runtime.skills(manifest.skills);
  return prompt === '' ? base : `${base}\n\n${prompt}`;
}
