import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { runCli } from '../support/run-cli.ts';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-update-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const toml = (name: string, extra = '') =>
  `name = "${name}"\ndescription = "v2"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${extra}`;

describe('kernel.update()', () => {
  it('replaces the manifest and keeps the id, the session and the memory; the new grants apply at once', async () => {
    const before = await host.kernel.spawn(manifest(toml('helper')));
    server.script([{ text: 'first' }]);
    await host.kernel.send('helper', 'remember this');
    await host.store.memory.put({ agentId: before.id, key: 'fact', value: 'kept', updatedAt: 1 });

    const after = await host.kernel.update('helper', manifest(toml('helper', '[capabilities]\ntools = ["agent_list"]\n')));
    expect(after).toMatchObject({ id: before.id, session_id: before.session_id, description: 'v2' });
    expect(after.capabilities).toEqual([{ kind: 'tool_invoke', pattern: 'agent_list' }]);
    expect(JSON.stringify((await host.kernel.session('helper')).messages)).toContain('remember this');
    expect((await host.store.memory.get(before.id, 'fact'))?.value).toBe('kept');
    server.script([{ toolCalls: [{ name: 'agent_list', input: {} }] }, { text: 'listed' }]);
    expect((await host.kernel.send('helper', 'who is here?')).text).toBe('listed');
    expect(await host.kernel.audit({ agent: 'helper', type: 'agent-update' })).toHaveLength(1);
  });

  it('refuses another name, a child exceeding its parent, and a parent its children would exceed', async () => {
    await host.kernel.spawn(manifest(toml('parent', '[capabilities]\nagent_spawn = true\ntools = ["agent_list", "file_read"]\nfile_read = ["/data/*"]\n')));
    await host.kernel.spawn(manifest(toml('child', '[capabilities]\ntools = ["file_read"]\nfile_read = ["/data/*"]\n')), { parent: 'parent' });
    await expect(host.kernel.update('child', manifest(toml('other')))).rejects.toThrow(
      'cannot update "child" with a manifest for "other": an agent\'s name does not change',
    );
    await expect(host.kernel.update('child', manifest(toml('child', '[capabilities]\ntools = ["shell_exec"]\nshell = ["*"]\n')))).rejects.toThrow(/shell/);
    await expect(host.kernel.update('parent', manifest(toml('parent', '[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\n')))).rejects.toThrow(
      'cannot update "parent": its child "child" would then exceed it',
    );
    expect(host.kernel.get('parent').capabilities).toContainEqual({ kind: 'file_read', pattern: '/data/*' });
  });

  it('tightening a parent tightens the agents it spawned, down the tree, stored and at once', async () => {
    const powers =
      '[capabilities]\nagent_spawn = true\ntools = ["shell_exec", "file_write", "agent_list"]\nshell = ["echo *"]\nfile_write = ["/tmp/loom-update-test/*"]\n';
    await host.kernel.spawn(manifest(toml('boss', powers)));
    await host.kernel.spawn(manifest(toml('kid', powers)), { parent: 'boss' });
    await host.kernel.spawn(manifest(toml('grandkid', powers)), { parent: 'kid' });

    await host.kernel.update(
      'boss',
      manifest(
        toml('boss', `tool_blocklist = ["shell_exec"]\n[exec_policy]\nallow_shell = false\n[autonomous]\napproval_required_for = ["file_write"]\n${powers}`),
      ),
    );
    for (const name of ['kid', 'grandkid']) {
      const held = host.kernel.get(name).manifest;
      expect({ name, blocklist: held.tool_blocklist, shell: held.exec_policy?.allow_shell, approvals: held.autonomous?.approval_required_for }).toEqual({
        name,
        blocklist: ['shell_exec'],
        shell: false,
        approvals: ['file_write'],
      });
      const stored = (await host.store.agents.list()).find((record) => record.name === name);
      expect(stored?.manifest).toMatchObject({ tool_blocklist: ['shell_exec'], exec_policy: { allow_shell: false } });
    }
    expect(await host.kernel.audit({ agent: 'grandkid', type: 'agent-update' })).toHaveLength(1);
    server.script([{ toolCalls: [{ name: 'shell_exec', input: { command: 'echo escaped' } }] }, { text: 'done' }]);
    expect((await host.kernel.send('kid', 'run it')).text).toBe('done');
    const denied = await host.kernel.audit({ agent: 'kid', type: 'tool-deny' });
    expect(denied.map((event) => event.data['reason'])).toEqual([
      'agent "kid" may not call shell_exec: its tool_allowlist, tool_blocklist or mcp_servers leaves it out',
    ]);
    expect(await host.kernel.audit({ agent: 'kid', type: 'tool-finish' })).toEqual([]);
  });

  it('names a descendant that would exceed the updated agent, stores nothing then, and leaves children an update does not change alone', async () => {
    await host.kernel.spawn(manifest(toml('boss', '[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\n')));
    await host.kernel.spawn(manifest(toml('kid', '[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\n')), { parent: 'boss' });
    await host.kernel.spawn(manifest(toml('grandkid', '[resources]\nmax_iterations = 20\n[capabilities]\ntools = ["agent_list"]\n')), { parent: 'kid' });

    // kid left max_iterations at its default, so it would take boss's 5; grandkid set 20 itself.
    await expect(
      host.kernel.update('boss', manifest(toml('boss', '[resources]\nmax_iterations = 5\n[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\n'))),
    ).rejects.toThrow(
      /^cannot update "boss": its descendant "grandkid" \(a child of "kid"\) would then exceed it \(.*\[resources\]\.max_iterations 20 is more than the parent's 5.*\); update or kill the child first$/,
    );
    expect(host.kernel.get('boss').manifest.resources.max_iterations).toBe(50);
    expect(host.kernel.get('kid').manifest.resources.max_iterations).toBe(50);

    await host.kernel.update(
      'boss',
      manifest(
        toml('boss', 'description = "only the words change"\n[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\n').replace('description = "v2"\n', ''),
      ),
    );
    expect(host.kernel.get('boss').description).toBe('only the words change');
    expect(await host.kernel.audit({ agent: 'kid', type: 'agent-update' })).toEqual([]);
    expect(await host.kernel.audit({ agent: 'grandkid', type: 'agent-update' })).toEqual([]);
  });

  it('loom agent update changes a stored agent from the command line', async () => {
    await host.close();
    const home = join(dir.path, 'home');
    await writeFile(join(dir.path, 'v1.toml'), toml('scribe'));
    await writeFile(join(dir.path, 'v2.toml'), toml('scribe', '[capabilities]\ntools = ["agent_list"]\n'));
    expect((await runCli(home, ['agent', 'spawn', join(dir.path, 'v1.toml')])).code).toBe(0);
    const updated = await runCli(home, ['agent', 'update', 'scribe', join(dir.path, 'v2.toml'), '--json']);
    expect(JSON.parse(updated.stdout)).toMatchObject({ name: 'scribe', capabilities: [{ kind: 'tool_invoke', pattern: 'agent_list' }] });
    host = await openTestHost(dir.path);
    expect(host.kernel.get('scribe').capabilities).toEqual([{ kind: 'tool_invoke', pattern: 'agent_list' }]);
  });
});
