import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManifestError } from '../../src/errors/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-profiles-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const agent = (name: string, fields: string): string =>
  `name = "${name}"\n${fields}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

/** The names of the tools the model was offered in request `index`. */
function offeredTools(index: number): string[] {
  const tools = (server.requests[index]?.body['tools'] ?? []) as { function: { name: string } }[];
  return tools.map((tool) => tool.function.name).sort();
}

describe('profile', () => {
  it('grants its tools, narrowed by [capabilities].tools: a "minimal" agent is offered file_read and file_list, reads its workspace, and may not run a shell; a "coding" one listing file_read is offered file_read alone', async () => {
    await host.kernel.spawn(manifest(agent('reader', 'profile = "minimal"')));
    await writeFile(join(host.runtime.workspaceOf({ name: 'reader', workspace: undefined }), 'notes.txt'), 'buy milk');
    server.script([{ toolCalls: [{ name: 'file_read', input: { path: 'notes.txt' } }] }, { text: 'You need milk.' }]);

    expect((await host.kernel.send('reader', 'what do I need?')).text).toBe('You need milk.');
    expect(offeredTools(0)).toEqual(['file_list', 'file_read']);
    expect(JSON.stringify(server.requests[1]?.body)).toContain('buy milk');
    const shell = await host.kernel.runAgentTool('reader', 'shell_exec', { command: 'ls' });
    expect(shell.isError).toBe(true);

    await host.kernel.spawn(manifest(agent('coder', 'profile = "coding"\n[capabilities]\ntools = ["file_read"]')));
    server.script([{ text: 'ok' }]);
    await host.kernel.send('coder', 'hello');
    expect(offeredTools(2)).toEqual(['file_read']);
  });

  it('is never widened by [capabilities].tools: a tool outside the profile is refused at load, naming the field', () => {
    const load = (): unknown => parseManifest('profile = "minimal"\n[capabilities]\ntools = ["file_read", "shell_exec"]', { source: 'a.toml' });
    expect(load).toThrow(ManifestError);
    expect(load).toThrow(
      'cannot load manifest "a.toml": [capabilities].tools: "shell_exec" is not in profile "minimal" (file_read, file_list); tools may narrow a profile, not widen it',
    );
  });

  it('gives a child no tool its parent lacks: a child naming a wider profile is refused', async () => {
    await host.kernel.spawn(manifest(agent('boss', 'profile = "minimal"\n[capabilities]\nagent_spawn = true')));
    await expect(host.kernel.spawn(manifest(agent('kid', 'profile = "coding"')), { parent: 'boss' })).rejects.toThrow(
      '[capabilities].tools "shell_exec" is not covered by the parent',
    );
  });
});
