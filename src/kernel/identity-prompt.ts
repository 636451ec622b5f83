import type { Manifest } from '../manifest/index.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import { defaultSystemPrompt } from './system-prompt.ts';

/**
 * Identity files (OpenFang's workspace files): with `generate_identity_files = true` an agent's
 * system prompt is read from these files in its workspace, each within
 * {@link IDENTITY_FILE_BUDGET_BYTES}, so a person shapes the agent by editing them. The host
 * writes the ones that are missing from the manifest when the agent starts (never over a file
 * that exists) and reads them for each turn.
 */

/** The identity files, in the order the system prompt reads them; `SOUL.md` holds the instructions. */
export const IDENTITY_FILES = ['SOUL.md', 'IDENTITY.md', 'USER.md', 'TOOLS.md', 'MEMORY.md', 'AGENTS.md', 'HEARTBEAT.md'] as const;

/** One identity file's name. */
export type IdentityFileName = (typeof IDENTITY_FILES)[number];

/** The most of one identity file read into the system prompt, in bytes (32 KB). */
export const IDENTITY_FILE_BUDGET_BYTES = 32 * 1024;

/** An identity file as read: its text (HTML comments, notes for people, taken out), and its size when the budget cut it. */
export interface IdentityFile {
  name: IdentityFileName;
  text: string;
  /** The file's size in bytes when it was larger than the budget and only its start was read. */
  truncatedFromBytes?: number;
}

/**
 * The system prompt of an agent's turn: `[model].system_prompt` (or its name and description);
 * with `generate_identity_files`, the identity files of its workspace instead: `SOUL.md` in place
 * of `system_prompt` (that, when `SOUL.md` is empty or gone), then each other file that says
 * something, under its name. A runtime that cannot read files leaves the manifest's prompt.
 */
export async function systemPromptOf(runtime: Pick<AgentRuntime, 'identityFiles'>, manifest: Manifest, workspace: string): Promise<string> {
  const base = manifest.model?.system_prompt ?? defaultSystemPrompt(manifest);
  if (!manifest.generate_identity_files || runtime.identityFiles === undefined) return base;
  const files = await runtime.identityFiles(workspace);
  return composeIdentityPrompt(base, files);
}

/** `base` with the identity files read in (see {@link systemPromptOf}). */
export function composeIdentityPrompt(base: string, files: readonly IdentityFile[]): string {
  const said = files.filter((file) => file.text.trim() !== '');
  const soul = said.find((file) => file.name === 'SOUL.md');
  const parts = [soul === undefined ? base : withNote(soul, soul.text.trim())];
  for (const file of said) {
    if (file !== soul) parts.push(withNote(file, `## ${file.name}\n\n${file.text.trim()}`));
  }
  return parts.join('\n\n');
}

function withNote(file: IdentityFile, text: string): string {
  if (file.truncatedFromBytes === undefined) return text;
  return `${text}\n\n[${file.name} is ${file.truncatedFromBytes} bytes; only its first ${IDENTITY_FILE_BUDGET_BYTES} were read]`;
}
