import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentDetailView } from '../../src/kernel/index.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { startApi, type Api } from '../http/api-harness.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let log: ReturnType<typeof createRecordingLogger>;

beforeEach(async () => {
  dir = await makeTempDir('loom-agent-skills-');
  log = createRecordingLogger();
  api = await startApi(dir.path, { logger: log });
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

/** Installs a skill as `loom package install` leaves it: `LOOM_HOME/skills/<org>/<name>/<version>/SKILL.md`. */
async function installSkill(org: string, name: string, version: string, instructions: string, dependencies: readonly string[] = []): Promise<void> {
  const folder = join(api.host.home.skillsDir, org, name, version);
  await mkdir(folder, { recursive: true });
  const depends = dependencies.length === 0 ? '' : `dependencies: [${dependencies.map((dependency) => JSON.stringify(dependency)).join(', ')}]\n`;
  await writeFile(
    join(folder, 'SKILL.md'),
    `---\nname: ${name}\ndescription: The ${name} skill. Use it for ${name} work.\nmetadata:\n  version: "${version}"\n${depends}---\n${instructions}\n`,
  );
}

const agentToml = (name: string, skills: string, extra = ''): string =>
  `name = "${name}"\nskills = ${skills}\n${extra}[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nsystem_prompt = "You are ${name}."\n`;

/** The system prompt of the last model request. */
function lastSystemPrompt(): string {
  const messages = server.requests.at(-1)?.body['messages'] as { role: string; content: string }[];
  return messages.find((message) => message.role === 'system')?.content ?? '';
}

/** Sends the agent a message and returns the system prompt its model call had. */
async function turn(name: string): Promise<string> {
  server.script([{ text: 'done' }]);
  await api.host.kernel.send(name, 'hello');
  return lastSystemPrompt();
}

async function spawnOverHttp(toml: string): Promise<AgentDetailView & { warnings: string[] }> {
  const response = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: toml });
  expect(response.status).toBe(201);
  return (await response.json()) as AgentDetailView & { warnings: string[] };
}

describe("a manifest's skills", () => {
  it('puts the named installed skills (by name, and pinned, with their dependencies) in the system prompt, after its own prompt, the same at every turn', async () => {
    await installSkill('acme', 'note-taker', '1.0.0', 'Write notes as bullet lists.', ['@acme/skills/dates']);
    await installSkill('acme', 'dates', '1.0.0', 'Write dates as YYYY-MM-DD.');
    await installSkill('acme', 'pdf-reader', '1.0.0', 'Old PDF rules.');
    await installSkill('acme', 'pdf-reader', '2.0.0', 'New PDF rules.');
    await installSkill('acme', 'unasked', '1.0.0', 'Never offered.');
    await api.host.kernel.spawn(manifest(agentToml('scribe', '["note-taker", "@acme/skills/pdf-reader@1.0.0"]')));

    const prompt = await turn('scribe');
    expect(prompt.startsWith('You are scribe.\n\n# Skills\n')).toBe(true);
    // A dependency comes before the skill that needs it; the pinned version, not the latest.
    const order = [
      '# Skill: dates',
      'Write dates as YYYY-MM-DD.',
      '# Skill: note-taker',
      'The note-taker skill. Use it for note-taker work.',
      'Write notes as bullet lists.',
      '# Skill: pdf-reader',
      'Old PDF rules.',
    ].map((text) => prompt.indexOf(text));
    expect(order.every((index) => index > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(prompt).not.toContain('New PDF rules.');
    expect(prompt).not.toContain('Never offered.');
    // The prefix a provider caches does not change from turn to turn.
    expect(await turn('scribe')).toBe(prompt);

    const detail = (await (await api.request('/api/agents/scribe')).json()) as AgentDetailView;
    expect(detail.skills).toEqual({
      skills: [
        { skill: '@acme/skills/dates@1.0.0', name: 'dates', description: 'The dates skill. Use it for dates work.', in_prompt: true },
        { skill: '@acme/skills/note-taker@1.0.0', name: 'note-taker', description: 'The note-taker skill. Use it for note-taker work.', in_prompt: true },
        { skill: '@acme/skills/pdf-reader@1.0.0', name: 'pdf-reader', description: 'The pdf-reader skill. Use it for pdf-reader work.', in_prompt: true },
      ],
      problems: [],
      budget_bytes: 32 * 1024,
    });
  });

  it('offers every installed skill for skills = [], the latest version of each, by qualified name', async () => {
    await installSkill('zeta', 'alpha', '1.0.0', 'Zeta alpha rules.');
    await installSkill('beta', 'omega', '1.0.0', 'Beta omega rules, old.');
    await installSkill('beta', 'omega', '1.10.0', 'Beta omega rules, new.');
    await api.host.kernel.spawn(manifest(agentToml('all', '[]')));

    const prompt = await turn('all');
    expect(prompt).toContain('Beta omega rules, new.');
    expect(prompt).not.toContain('Beta omega rules, old.');
    expect(prompt.indexOf('Beta omega rules, new.')).toBeLessThan(prompt.indexOf('Zeta alpha rules.'));
    // A skill installed while the agent runs is offered at its next turn.
    await installSkill('acme', 'late', '1.0.0', 'Late rules.');
    expect(await turn('all')).toContain('Late rules.');
  });

  it('warns at spawn of a named skill that is not installed, naming it, where Loom looked and how to install it; the agent runs without it', async () => {
    await installSkill('acme', 'note-taker', '1.0.0', 'Write notes as bullet lists.');
    const spawned = await spawnOverHttp(agentToml('researcher', '["note-taker", "pdf-reader", "@acme/skills/regex-expert@2.0.0"]'));
    const skillsDir = api.host.home.skillsDir;
    expect(spawned.warnings).toEqual([
      `skill "pdf-reader" is not installed (looked for "${join(skillsDir, '<org>', 'pdf-reader')}" in every org); install it with its code (loom package install SKIL-…) or with a package that brings it, or take it out of the manifest's skills; the agent runs without it`,
      `skill "@acme/skills/regex-expert@2.0.0": "@acme/skills/regex-expert@2.0.0" is not installed (looked in "${join(skillsDir, 'acme', 'regex-expert', '2.0.0')}"); install it with its code (loom package install SKIL-…) or with a package that brings it, or take it out of the manifest's skills; the agent runs without it`,
    ]);
    expect(spawned.skills?.skills.map((skill) => skill.skill)).toEqual(['@acme/skills/note-taker@1.0.0']);
    // The daemon's log says it too, with the agent.
    expect(log.entries.some((entry) => entry.level === 'info' && entry.message === `agent "researcher": ${spawned.warnings[0] ?? ''}`)).toBe(true);

    const prompt = await turn('researcher');
    expect(prompt).toContain('Write notes as bullet lists.');

    // Two orgs with one name: the plain name is ambiguous, and neither is offered.
    await installSkill('other', 'note-taker', '1.0.0', 'Other notes.');
    const updated = await api.request('/api/agents/researcher', {
      method: 'PUT',
      headers: { 'content-type': 'application/toml' },
      body: agentToml('researcher', '["note-taker"]'),
    });
    const body = (await updated.json()) as { warnings: string[] };
    expect(body.warnings).toEqual([
      expect.stringContaining(
        'skill "note-taker" is ambiguous: @acme/skills/note-taker and @other/skills/note-taker are installed, so neither is offered; name one of them',
      ) as unknown,
    ]);
    expect(await turn('researcher')).not.toContain('notes');
  });

  it('refuses a skills entry that names no skill, at spawn, naming the entry', async () => {
    const response = await api.request('/api/agents', {
      method: 'POST',
      headers: { 'content-type': 'application/toml' },
      body: agentToml('typo', '["note-taker", "@acme/note-taker"]'),
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toContain('skills[1]: expected a skill\'s name such as "note-taker"');
    expect(error.message).toContain('"@acme/note-taker"');
  });

  it('reads skills whole while they fit in 32 KB, and lists the rest by name and description with a note, never cutting one', async () => {
    await installSkill('acme', 'first', '1.0.0', `FIRST-START ${'a'.repeat(20 * 1024)} FIRST-END`);
    await installSkill('acme', 'second', '1.0.0', `SECOND-START ${'b'.repeat(20 * 1024)} SECOND-END`);
    await installSkill('acme', 'third', '1.0.0', 'THIRD small.');
    await api.host.kernel.spawn(manifest(agentToml('reader', '["first", "second", "third"]')));

    const prompt = await turn('reader');
    expect(prompt).toContain('FIRST-END');
    expect(prompt).not.toContain('SECOND-START');
    // In the allowlist's order: a small skill after the one left out is left out too.
    expect(prompt).not.toContain('THIRD small.');
    expect(prompt).toContain(
      '[Skills left out: their instructions did not fit in the 32768 bytes this prompt gives skills. They are:\n- second (@acme/skills/second@1.0.0): The second skill. Use it for second work.\n- third (@acme/skills/third@1.0.0): The third skill. Use it for third work.\n]',
    );
    const detail = (await (await api.request('/api/agents/reader')).json()) as AgentDetailView;
    expect(detail.skills?.skills.map((skill) => [skill.name, skill.in_prompt])).toEqual([
      ['first', true],
      ['second', false],
      ['third', false],
    ]);
  });

  it("gives a child only its parent's skills: an empty list takes the parent's, and a skill the parent lacks is refused", async () => {
    await installSkill('acme', 'alpha', '1.0.0', 'Alpha rules.');
    await installSkill('acme', 'beta', '1.0.0', 'Beta rules.');
    await api.host.kernel.spawn(manifest(agentToml('parent', '["@acme/skills/alpha"]', 'capabilities.agent_spawn = true\n')));

    await api.host.kernel.spawn(manifest(agentToml('child', '[]')), { parent: 'parent' });
    expect(api.host.kernel.get('child').manifest.skills).toEqual(['@acme/skills/alpha']);
    const prompt = await turn('child');
    expect(prompt).toContain('Alpha rules.');
    expect(prompt).not.toContain('Beta rules.');

    // A pinned version of the parent's skill is within it; another skill, or the plain name, is not.
    await api.host.kernel.spawn(manifest(agentToml('pinned', '["@acme/skills/alpha@1.0.0"]')), { parent: 'parent' });
    expect(await turn('pinned')).toContain('Alpha rules.');
    await expect(api.host.kernel.spawn(manifest(agentToml('greedy', '["@acme/skills/beta"]')), { parent: 'parent' })).rejects.toThrow(
      /skills "@acme\/skills\/beta" is not in the parent's skills \("@acme\/skills\/alpha"\)/,
    );
    await expect(api.host.kernel.spawn(manifest(agentToml('plain', '["alpha"]')), { parent: 'parent' })).rejects.toThrow(
      /skills "alpha" is not in the parent's skills/,
    );
  });
});
