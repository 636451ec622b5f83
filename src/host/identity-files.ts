import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileState, keptWhileUnchanged } from '../config/index.ts';
import { capabilitiesFromManifest } from '../manifest/index.ts';
import { defaultSystemPrompt, IDENTITY_FILE_BUDGET_BYTES, IDENTITY_FILES, type IdentityFile, type IdentityFileName } from '../kernel/index.ts';
import type { Manifest } from '../manifest/index.ts';

/**
 * The identity files on disk (see `src/kernel/identity-prompt.ts`): written from the manifest
 * where missing, read within their budget. HTML comments in them are notes for people: they are
 * written into the templates and left out of the prompt.
 */

const NOTE = /<!--[\s\S]*?-->/g;

const list = (items: readonly string[], none: string): string => (items.length === 0 ? `- ${none}` : items.map((item) => `- ${item}`).join('\n'));

/** What each file starts as, from the manifest. */
export function identitySeeds(manifest: Manifest): Record<IdentityFileName, string> {
  const granted = capabilitiesFromManifest(manifest.capabilities, manifest.profile);
  const tools = granted.flatMap((capability) =>
    capability.kind === 'tool_all' ? ['every tool'] : capability.kind === 'tool_invoke' ? [capability.pattern] : [],
  );
  const messages = granted.flatMap((capability) => (capability.kind === 'agent_message' ? [capability.pattern] : []));
  const managed = manifest.delegate?.managed_agents ?? manifest.workflow?.managed_agents ?? [];
  const { schedule } = manifest;
  const when = {
    reactive: 'You run when someone messages you.',
    continuous: `You are woken every ${schedule.interval_seconds ?? 60} seconds to check for work.`,
    periodic: `You are woken at each time of the cron schedule "${schedule.cron ?? ''}".`,
    proactive: `You are woken by these events:\n${list(
      schedule.triggers.map((trigger) => `${trigger.event}${trigger.pattern === undefined ? '' : ` matching "${trigger.pattern}"`}`),
      'none',
    )}`,
  }[schedule.mode];
  const rules = [
    ...(manifest.tool_allowlist.length === 0 ? [] : [`Only these of them: ${manifest.tool_allowlist.join(', ')}.`]),
    ...(manifest.tool_blocklist.length === 0 ? [] : [`Never these: ${manifest.tool_blocklist.join(', ')}.`]),
    ...(manifest.autonomous === undefined || manifest.autonomous.approval_required_for.length === 0
      ? []
      : [`A person approves each call of: ${manifest.autonomous.approval_required_for.join(', ')}.`]),
  ];
  return {
    'SOUL.md': `<!-- Your agent's instructions: Loom reads this file as its system prompt (in place of [model].system_prompt) at every turn. -->\n${manifest.model?.system_prompt ?? defaultSystemPrompt(manifest)}\n`,
    'IDENTITY.md': `Name: ${manifest.name}\n${manifest.description === '' ? '' : `Purpose: ${manifest.description}\n`}Version: ${manifest.version}\n${manifest.author === '' ? '' : `Author: ${manifest.author}\n`}${manifest.tags.length === 0 ? '' : `Tags: ${manifest.tags.join(', ')}\n`}`,
    'USER.md':
      '<!-- Who this agent works for: names, preferences, time zone, how they like answers. Write it here; notes in comments like this one are not read. -->\n',
    'TOOLS.md': `The tools you may call:\n${list(tools, 'none')}\n${rules.length === 0 ? '' : `\n${rules.join('\n')}\n`}`,
    'MEMORY.md':
      '<!-- What this agent should always keep in mind: facts, decisions, standing instructions. Notes in comments like this one are not read. -->\n',
    'AGENTS.md': `Agents you may message:\n${list(messages, 'none')}\n${managed.length === 0 ? '' : `\nAgents you hand work to: ${managed.join(', ')}.\n`}${manifest.capabilities.agent_spawn ? '\nYou may spawn helper agents, within your own capabilities.\n' : ''}`,
    'HEARTBEAT.md': `${when}\n`,
  };
}

/**
 * Writes each identity file missing from `workspace` (which must exist) from the manifest; a file
 * that exists, even empty, is left as a person made it.
 * @throws the file system's error for anything but a file that is already there.
 */
export async function writeIdentityFiles(workspace: string, manifest: Manifest): Promise<IdentityFileName[]> {
  const seeds = identitySeeds(manifest);
  const written: IdentityFileName[] = [];
  for (const name of IDENTITY_FILES) {
    try {
      await writeFile(join(workspace, name), seeds[name], { flag: 'wx' });
      written.push(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return written;
}

/**
 * The identity files of `workspace`, each cut at {@link IDENTITY_FILE_BUDGET_BYTES} (at a whole
 * character) and without its HTML comments; a missing file is left out.
 */
export async function readIdentityFiles(workspace: string): Promise<IdentityFile[]> {
  const files: IdentityFile[] = [];
  for (const name of IDENTITY_FILES) {
    let handle;
    try {
      handle = await open(join(workspace, name), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    try {
      const { size } = await handle.stat();
      const buffer = Buffer.alloc(Math.min(size, IDENTITY_FILE_BUDGET_BYTES));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      // A cut in the middle of a character drops that character.
      const text = new TextDecoder().decode(buffer.subarray(0, bytesRead)).replace(/\uFFFD+$/, '');
      files.push({ name, text: text.replace(NOTE, ''), ...(size > IDENTITY_FILE_BUDGET_BYTES ? { truncatedFromBytes: size } : {}) });
    } finally {
      await handle.close();
    }
  }
  return files;
}

/** How many workspaces' identity files are kept (one per agent that asks for them). */
const KEPT_WORKSPACES = 512;

/**
 * {@link readIdentityFiles}, read again only when a workspace's identity files changed (written,
 * edited, removed; see `keptWhileUnchanged`), where a turn asks for them every time. An edit is
 * read at the agent's next turn, as before.
 */
export function createIdentityFileReader(): (workspace: string) => Promise<IdentityFile[]> {
  return keptWhileUnchanged({
    read: readIdentityFiles,
    keyOf: (workspace: string) => workspace,
    stateOf: (workspace) => IDENTITY_FILES.map((name) => fileState(join(workspace, name))).join('\n'),
    limit: KEPT_WORKSPACES,
  });
}
