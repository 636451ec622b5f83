import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/access/index.ts';
import { ConfigSchema, loadConfig, resolveLoomHome } from '../../src/config/index.ts';
import { createHttpApp } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createMcpHttpHandler } from '../../src/mcp/server/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { agentToml } from '../http/api-harness.ts';

/**
 * A key's name is who it is only if no two keys share it and no key takes a name Loom gives a
 * principal itself; and what a principal owns (an A2A task, an MCP SSE session) is its own only
 * when its name, role and agents all match.
 */

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-principal-identity-');
});
afterEach(async () => {
  await host?.close();
  host = undefined;
  await dir.remove();
});

/** Loads `toml` as the home's config.toml, the way the daemon and the CLI do. */
async function loadConfigText(toml: string): Promise<unknown> {
  const home = resolveLoomHome({ LOOM_HOME: join(dir.path, 'home') }, '/');
  await mkdir(home.root, { recursive: true });
  await writeFile(home.configPath, toml);
  return loadConfig(home);
}

const key = (name: string, role: string, variable: string): string => `[[auth.keys]]\nname = "${name}"\nrole = "${role}"\nkey_env = "${variable}"\n`;

describe('[[auth.keys]] names', () => {
  it('refuses two keys of the same name at load, naming the key and where it is', async () => {
    const loading = loadConfigText(`${key('admin', 'owner', 'ADMIN_KEY')}\n${key('admin', 'user', 'SNEAKY_KEY')}`);
    await expect(loading).rejects.toThrow(
      /cannot load config ".*config\.toml": \[auth\]\.keys\[1\]\.name: another key is already named "admin"; each key needs its own name/,
    );
  });

  it('refuses a key named as a principal Loom names itself ("local", "LOOM_API_KEY")', async () => {
    for (const name of ['local', 'LOOM_API_KEY']) {
      await expect(loadConfigText(key(name, 'user', 'SOME_KEY'))).rejects.toThrow(
        `[auth].keys[0].name: "${name}" is a name Loom gives a principal itself ("local", "LOOM_API_KEY"); name the key otherwise`,
      );
    }
  });

  it('accepts keys of distinct names', async () => {
    await expect(loadConfigText(`${key('admin', 'owner', 'ADMIN_KEY')}\n${key('ci', 'user', 'CI_KEY')}`)).resolves.toMatchObject({
      auth: { keys: [{ name: 'admin' }, { name: 'ci' }] },
    });
  });
});

describe('what a principal owns', () => {
  // The config changed between two runs of the daemon sharing one store: "admin" was the owner's
  // key, and is now a user key. The task the owner made is not the new key's.
  it('a user key named like the owner key that created an A2A task cannot read it: 404 as for an unknown task', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const served = host;
    const appFor = (role: 'owner' | 'user') =>
      createHttpApp({
        kernel: served.kernel,
        config: ConfigSchema.parse({ auth: { keys: [{ name: 'admin', role, key_env: 'ADMIN_KEY' }] } }),
        env: { ADMIN_KEY: 'admin-secret' },
        clock: served.clock,
        logger: createSilentLogger(),
        clientAddress: () => '127.0.0.1',
        tasks: served.store.tasks,
      });
    const request = (app: ReturnType<typeof appFor>, path: string, init: RequestInit = {}) =>
      app.request(`http://127.0.0.1${path}`, {
        ...init,
        headers: {
          host: '127.0.0.1',
          authorization: 'Bearer admin-secret',
          'content-type': 'application/json',
          ...(init.headers as Record<string, string> | undefined),
        },
      });

    const owner = appFor('owner');
    model.script([{ text: "the owner's plan" }]);
    const sent = await request(owner, '/a2a/tasks/send', {
      method: 'POST',
      body: JSON.stringify({ method: 'tasks/send', params: { message: { role: 'user', parts: [{ type: 'text', text: 'plan' }] } } }),
    });
    expect(sent.status).toBe(200);
    const { id } = (await sent.json()) as { id: string };
    expect((await request(owner, `/a2a/tasks/${id}`)).status).toBe(200);

    const user = appFor('user');
    const read = await request(user, `/a2a/tasks/${id}`);
    expect(read.status).toBe(404);
    expect(await read.json()).toEqual({ error: { code: 'TASK_NOT_FOUND', message: `no task "${id}" (unknown, or evicted)` } });
  });

  it('an MCP SSE session answers only the principal that opened it, not another of the same name', async () => {
    host = await openTestHost(dir.path);
    const handler = createMcpHttpHandler({ kernel: host.kernel, config: ConfigSchema.parse({}), version: '9.9.9-test', clock: host.clock });
    const opener: Principal = { name: 'ci', role: 'owner', agents: ['*'] };
    const namesake: Principal = { name: 'ci', role: 'user', agents: ['helper-*'] };
    const stream = await handler.sse(new Request('http://127.0.0.1/mcp/sse'), { principal: opener });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const endpoint = /data: (\S+)/.exec(first)?.[1] ?? '';
    expect(endpoint).toMatch(/^\/mcp\/messages\?sessionId=/);
    const post = (principal: Principal) =>
      handler.messages(
        new Request(`http://127.0.0.1${endpoint}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
        }),
        { principal },
      );
    expect((await post(namesake)).status).toBe(404);
    expect((await post(opener)).status).toBe(202);
    await reader.cancel();
    await handler.close();
  });
});
