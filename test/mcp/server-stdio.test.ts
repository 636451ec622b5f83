import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ClientOptions, ResourceNotFoundError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.ts';
import { TEST_KEYS } from '../helpers/test-host.ts';
import { makeTempDir } from '../helpers/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { writeDaemonFile } from '../../src/daemon/index.ts';
import { type Api, OWNER_AND_HELPER_KEYS, startApi } from '../http/api-harness.ts';
import { agentManifest, firstText, MODERN_REVISION, waitFor } from './server-harness.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** `node bin/loom.js mcp` once the CLI registers the command; until then a stand-in running the same command. */
const ENTRY = join(ROOT, 'bin/loom.js');

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let client: Client | undefined;
let stderr = '';

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-server-stdio-');
  home = join(dir.path, 'home');
  const manifestPath = join(dir.path, 'helper.toml');
  await writeFile(manifestPath, `name = "helper"\ndescription = "Answers questions"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`);
  expect((await runCli(home, ['agent', 'spawn', manifestPath])).code).toBe(0);
  stderr = '';
});
afterEach(async () => {
  await client?.close();
  client = undefined;
  await dir.remove();
});

/** Spawns `loom mcp` on the test home and connects the official client to it in `era`. */
async function connect(era: 'modern' | 'legacy', env: Record<string, string> = {}, clientOptions: ClientOptions = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ENTRY, 'mcp'],
    env: { PATH: process.env['PATH'] ?? '', LOOM_HOME: home, HOME: dir.path, ...TEST_KEYS, ...env },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  client = new Client({ name: 'loom-test-client', version: '1.0.0' }, {
    ...(era === 'modern' ? { versionNegotiation: { mode: { pin: MODERN_REVISION } } } : {}),
    ...clientOptions,
  });
  await client.connect(transport);
  return client;
}

describe.each(['modern', 'legacy'] as const)('loom mcp over stdio with a %s client', (era) => {
  it('lists the agents as tools, and a tool call returns the agent\'s scripted reply', async () => {
    const mcp = await connect(era);
    expect(mcp.getProtocolEra()).toBe(era);
    const { tools } = await mcp.listTools();
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ name: 'loom_agent_helper', inputSchema: { required: ['message'] } });
    expect(tools[0]?.description).toContain('Answers questions');

    model.script([{ text: 'Oslo.' }]);
    const result = await mcp.callTool({ name: 'loom_agent_helper', arguments: { message: 'Capital of Norway?' } });
    expect(result.isError, stderr).not.toBe(true);
    expect(firstText(result)).toBe('Oslo.');
    expect(model.requests).toHaveLength(1);
  }, 30_000);
});

describe('loom mcp while a daemon runs', () => {
  let api: Api | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('proxies to the daemon with LOOM_API_KEY: lists and calls its agents, and follows a spawn with list_changed', async () => {
    api = await startApi(dir.path, { env: { LOOM_API_KEY: 'owner-secret' } });
    const address = new URL(api.url);
    await writeDaemonFile(api.host.home, { pid: process.pid, host: address.hostname, port: Number(address.port), url: api.url, startedAt: new Date().toISOString(), version: 'test' });
    const waiter = waitFor<string[]>((names) => names.includes('loom_agent_second'), 10_000);
    const mcp = await connect('legacy', { LOOM_API_KEY: 'owner-secret' }, {
      listChanged: { tools: { debounceMs: 0, onChanged: (_error, tools) => waiter.push((tools ?? []).map((tool) => tool.name)) } },
    });
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper']);

    model.script([{ text: 'From the daemon.' }]);
    const result = await mcp.callTool({ name: 'loom_agent_helper', arguments: { message: 'hi' } });
    expect(firstText(result), stderr).toBe('From the daemon.');
    expect(await api.host.kernel.usage({ agent: 'helper' })).not.toHaveLength(0);

    await api.host.kernel.spawn(agentManifest('second', model.url));
    expect(await waiter.done).toEqual(['loom_agent_helper', 'loom_agent_second']);
  }, 30_000);

  it("serves the daemon's agents as resources for LOOM_API_KEY's principal: reads them, and an agent outside its reach as not found", async () => {
    api = await startApi(dir.path, OWNER_AND_HELPER_KEYS);
    const address = new URL(api.url);
    await writeDaemonFile(api.host.home, { pid: process.pid, host: address.hostname, port: Number(address.port), url: api.url, startedAt: new Date().toISOString(), version: 'test' });
    model.script([{ text: 'From the daemon.' }]);
    await api.host.kernel.send('helper', 'hi');

    const owner = await connect('legacy', { LOOM_API_KEY: 'admin-secret' });
    expect((await owner.listResources()).resources.map((resource) => resource.uri)).toEqual(['loom://agents/helper/session', 'loom://agents/helper/turns/last']);
    const read = async (uri: string): Promise<unknown> => JSON.parse((((await owner.readResource({ uri })).contents[0]) as { text: string }).text);
    expect(await read('loom://agents/helper/session')).toMatchObject({ agent: 'helper', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant' }], running: null });
    expect(await read('loom://agents/helper/turns/last')).toMatchObject({ agent: 'helper', turn: { message: 'hi', text: 'From the daemon.', status: 'finished' } });
    await expect(owner.readResource({ uri: 'loom://agents/nobody/session' })).rejects.toBeInstanceOf(ResourceNotFoundError);
    await owner.close();

    // helper-bot may reach helper-* only: "helper" is no resource of its, and reads as unknown.
    const helperBot = await connect('legacy', { LOOM_API_KEY: 'helper-secret' });
    expect((await helperBot.listResources()).resources).toEqual([]);
    await expect(helperBot.readResource({ uri: 'loom://agents/helper/turns/last' })).rejects.toMatchObject({ code: -32602, data: { uri: 'loom://agents/helper/turns/last' } });
  }, 30_000);

  it('turns the daemon refusing a wrong key into an MCP error naming the reason', async () => {
    api = await startApi(dir.path, { env: { LOOM_API_KEY: 'owner-secret' } });
    const address = new URL(api.url);
    await writeDaemonFile(api.host.home, { pid: process.pid, host: address.hostname, port: Number(address.port), url: api.url, startedAt: new Date().toISOString(), version: 'test' });
    const mcp = await connect('legacy', { LOOM_API_KEY: 'wrong' });
    await expect(mcp.listTools()).rejects.toThrow(/API key is not valid/);
  }, 30_000);
});
