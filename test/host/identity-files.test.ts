import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { createIdentityFileReader } from '../../src/host/identity-files.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-identity-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const scribe = (fields = 'generate_identity_files = true', name = 'scribe'): string =>
  `name = "${name}"\ndescription = "keeps the minutes"\n${fields}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nsystem_prompt = "Be terse."\n[capabilities]\ntools = ["file_read", "memory_store"]\nagent_message = ["archivist"]\n`;

const workspace = (name = 'scribe'): string => host.runtime.workspaceOf({ name, workspace: undefined });

/** The system prompt of the model request `index`. */
function systemPromptOf(index: number): string {
  const messages = server.requests[index]?.body['messages'] as { role: string; content: string }[];
  return messages.find((message) => message.role === 'system')?.content ?? '';
}

/** Sends the agent a message and returns the system prompt its model call had. */
async function turn(name = 'scribe'): Promise<string> {
  server.script([{ text: 'noted' }]);
  await host.kernel.send(name, 'hello');
  return systemPromptOf(server.requests.length - 1);
}

describe('generate_identity_files', () => {
  it('writes the identity files from the manifest at spawn and reads them into the system prompt; an agent that does not ask gets neither', async () => {
    await host.kernel.spawn(manifest(scribe()));
    expect((await readdir(workspace())).sort()).toEqual(['AGENTS.md', 'HEARTBEAT.md', 'IDENTITY.md', 'MEMORY.md', 'SOUL.md', 'TOOLS.md', 'USER.md']);
    expect(await readFile(join(workspace(), 'SOUL.md'), 'utf8')).toContain('Be terse.');
    expect(await readFile(join(workspace(), 'TOOLS.md'), 'utf8')).toContain('- file_read\n- memory_store');

    const prompt = await turn();
    expect(prompt).toContain('Be terse.');
    expect(prompt).toContain('## IDENTITY.md\n\nName: scribe\nPurpose: keeps the minutes');
    expect(prompt).toContain('## AGENTS.md\n\nAgents you may message:\n- archivist');
    expect(prompt).toContain('## HEARTBEAT.md\n\nYou run when someone messages you.');
    // The templates a person has not filled say nothing, and their notes are not read.
    expect(prompt).not.toContain('USER.md');
    expect(prompt).not.toContain('<!--');

    await host.kernel.spawn(manifest(scribe('', 'clerk')));
    expect(await readdir(workspace('clerk'))).toEqual([]);
    await writeFile(join(workspace('clerk'), 'SOUL.md'), 'Answer in French.');
    const own = await turn('clerk');
    expect(own).toContain('Be terse.');
    expect(own).not.toContain('French');
  });

  it('lets a person shape the agent by editing the files, and never writes over an edit', async () => {
    await host.kernel.spawn(manifest(scribe()));
    await writeFile(join(workspace(), 'SOUL.md'), 'Answer in French.');
    await writeFile(join(workspace(), 'USER.md'), 'The user is Ada; she prefers lists.');
    await writeFile(join(workspace(), 'HEARTBEAT.md'), '');

    const prompt = await turn();
    expect(prompt).toContain('Answer in French.');
    expect(prompt).not.toContain('Be terse.');
    expect(prompt).toContain('## USER.md\n\nThe user is Ada; she prefers lists.');
    expect(prompt).not.toContain('HEARTBEAT.md');

    // A restart starts the agent again: the files it finds are kept as they are.
    await host.close();
    host = await openTestHost(dir.path, {}, undefined, { clock: host.clock });
    expect(host.kernel.get('scribe').state).toBe('running');
    expect(await readFile(join(workspace(), 'SOUL.md'), 'utf8')).toBe('Answer in French.');
    expect(await readFile(join(workspace(), 'HEARTBEAT.md'), 'utf8')).toBe('');
  });

  it('reads at most 32 KB of each file, saying so', async () => {
    await host.kernel.spawn(manifest(scribe()));
    await writeFile(join(workspace(), 'MEMORY.md'), `${'a'.repeat(32 * 1024)}TAIL`);
    const prompt = await turn();
    expect(prompt).toContain(`## MEMORY.md\n\n${'a'.repeat(32 * 1024)}\n\n[MEMORY.md is 32772 bytes; only its first 32768 were read]`);
    expect(prompt).not.toContain('TAIL');
  });
});

describe('the identity files a turn reads', () => {
  it('are read again only when one of them changed: written, edited or removed', async () => {
    const folder = join(dir.path, 'workspace');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'SOUL.md'), 'Be kind.');
    const read = createIdentityFileReader();

    const first = read(folder);
    expect((await first).map((file) => [file.name, file.text])).toEqual([['SOUL.md', 'Be kind.']]);
    // Nothing changed: the same files, not read again.
    expect(read(folder)).toBe(first);

    await writeFile(join(folder, 'SOUL.md'), 'Be kind, and brief.');
    await writeFile(join(folder, 'USER.md'), 'Ada, who likes lists.');
    expect((await read(folder)).map((file) => [file.name, file.text])).toEqual([
      ['SOUL.md', 'Be kind, and brief.'],
      ['USER.md', 'Ada, who likes lists.'],
    ]);

    await rm(join(folder, 'SOUL.md'));
    expect((await read(folder)).map((file) => file.name)).toEqual(['USER.md']);
  });
});
