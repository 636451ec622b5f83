import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-update-race-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const toml = (name: string, extra = '') => `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n${extra}`;
const shell = '[capabilities]\nagent_spawn = true\ntools = ["shell_exec", "agent_list"]\nshell = ["echo *"]\n';
const noShell = '[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\n';

/** Whether the capabilities grant the shell_exec tool. */
const hasShell = (capabilities: readonly { kind: string; pattern?: string }[] | undefined): boolean =>
  capabilities?.some((capability) => capability.kind === 'tool_invoke' && capability.pattern === 'shell_exec') ?? false;

describe('a spawn under a parent whose update runs at the same time (one node)', () => {
  it('is judged by the manifest the update stored when the update came first: the child is refused', async () => {
    await host.kernel.spawn(manifest(toml('boss', shell)));
    const [updated, spawned] = await Promise.allSettled([
      host.kernel.update('boss', manifest(toml('boss', noShell))),
      host.kernel.spawn(manifest(toml('kid', shell)), { parent: 'boss' }),
    ]);
    expect(updated.status).toBe('fulfilled');
    expect(spawned).toMatchObject({
      status: 'rejected',
      reason: { message: expect.stringContaining('cannot give a child agent capabilities its parent lacks: [capabilities].tools "shell_exec"') as unknown },
    });
    expect(hasShell(host.kernel.get('boss').capabilities)).toBe(false);
    expect(host.kernel.list().map((agent) => agent.name)).toEqual(['boss']);
  });

  it('is seen by the update when the spawn came first: the update is refused, naming the child', async () => {
    await host.kernel.spawn(manifest(toml('boss', shell)));
    const [spawned, updated] = await Promise.allSettled([
      host.kernel.spawn(manifest(toml('kid', shell)), { parent: 'boss' }),
      host.kernel.update('boss', manifest(toml('boss', noShell))),
    ]);
    expect(spawned.status).toBe('fulfilled');
    expect(updated).toMatchObject({
      status: 'rejected',
      reason: { message: expect.stringContaining('cannot update "boss": its child "kid" would then exceed it') as unknown },
    });
    expect([hasShell(host.kernel.get('boss').capabilities), hasShell(host.kernel.get('kid').capabilities)]).toEqual([true, true]);
  });
});
