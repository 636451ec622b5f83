import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ClientOptions, ProtocolError, ResourceNotFoundError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
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
  await writeFile(
    manifestPath,
    `name = "helper"\ndescription = "Answers questions"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`,
  );
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
  client = new Client(
    { name: 'loom-test-client', version: '1.0.0' },
    {
      ...(era === 'modern' ? { versionNegotiation: { mode: { pin: MODERN_REVISION } } } : {}),
      ...clientOptions,
    },
  );
  await client.connect(transport);
  return client;
}

describe.each(['modern', 'legacy'] as const)('loom mcp over stdio with a %s client', (era) => {
  it("lists the agents as tools, and a tool call returns the agent's scripted reply", async () => {
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

  it('answers a tool call over 10 MB with an error naming the limit and its size, and serves the next request (it exited with code 13)', async () => {
    const mcp = await connect(era);
    const refused = await mcp.callTool({ name: 'loom_agent_helper', arguments: { message: 'x'.repeat(11 * 1024 * 1024) } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProtocolError);
    expect(refused).toMatchObject({ code: -32600, data: { limit: 10_485_760 } });
    expect((refused as Error).message).toMatch(/^MCP message of 11,5\d\d,\d{3} bytes is over the 10 MB limit \(10,485,760 bytes\)$/);
    expect(model.requests).toHaveLength(0);
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper']);
  }, 30_000);
});

/** One message `loom mcp` wrote, and how it was framed. */
interface Written {
  framing: 'line' | 'content-length';
  message: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };
}

/** `loom mcp` spoken to byte by byte: what is written to its stdin, and each message it writes back, in order. */
function rawServer(): { child: ChildProcessWithoutNullStreams; next: () => Promise<Written> } {
  const child = spawn(process.execPath, [ENTRY, 'mcp'], { env: { PATH: process.env['PATH'] ?? '', LOOM_HOME: home, HOME: dir.path, ...TEST_KEYS } });
  let output = Buffer.alloc(0);
  const waiting: (() => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    output = Buffer.concat([output, chunk]);
    for (const wake of waiting.splice(0)) wake();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  child.once('exit', () => {
    for (const wake of waiting.splice(0)) wake();
  });
  const take = (): Written | undefined => {
    const text = output.toString('latin1');
    const header = /^Content-Length: (\d+)\r\n\r\n/.exec(text);
    if (header !== null) {
      const start = header[0].length;
      const length = Number(header[1]);
      if (output.length < start + length) return undefined;
      const body = output.subarray(start, start + length).toString('utf8');
      output = output.subarray(start + length);
      return { framing: 'content-length', message: JSON.parse(body) as Written['message'] };
    }
    const newline = output.indexOf(10);
    if (newline === -1) return undefined;
    const line = output.subarray(0, newline).toString('utf8');
    output = output.subarray(newline + 1);
    return { framing: 'line', message: JSON.parse(line) as Written['message'] };
  };
  const next = async (): Promise<Written> => {
    for (;;) {
      const written = take();
      if (written !== undefined) return written;
      if (child.exitCode !== null) throw new Error(`loom mcp exited with code ${child.exitCode} before answering: ${stderr}`);
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };
  return { child, next };
}

const framed = (json: string): string => `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const INITIALIZED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });

describe('loom mcp framing', () => {
  let raw: ReturnType<typeof rawServer> | undefined;
  afterEach(() => {
    raw?.child.kill();
    raw = undefined;
  });

  it('reads Content-Length framed messages and JSON lines, answering each in the framing of the last message received', async () => {
    raw = rawServer();
    raw.child.stdin.write(framed(INITIALIZE));
    expect(await raw.next()).toMatchObject({ framing: 'content-length', message: { id: 1, result: { serverInfo: { name: 'loom' } } } });
    raw.child.stdin.write(framed(INITIALIZED));
    raw.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    const listed = await raw.next();
    expect(listed).toMatchObject({ framing: 'line', message: { id: 2 } });
    expect((listed.message.result?.['tools'] as { name: string }[]).map((tool) => tool.name)).toEqual(['loom_agent_helper']);
    // A header split across writes, then a body followed by the next message in the same write.
    const ping = (id: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });
    raw.child.stdin.write('Content-Len');
    raw.child.stdin.write(`gth: ${Buffer.byteLength(ping(3))}\r\n\r\n${ping(3)}Content-Length: ${Buffer.byteLength(ping(4))}\r\n\r\n`);
    raw.child.stdin.write(ping(4));
    expect(await raw.next()).toMatchObject({ framing: 'content-length', message: { id: 3, result: {} } });
    expect(await raw.next()).toMatchObject({ framing: 'content-length', message: { id: 4, result: {} } });
    raw.child.stdin.write(`${ping(5)}\n`);
    expect(await raw.next()).toMatchObject({ framing: 'line', message: { id: 5, result: {} } });
  }, 30_000);

  it('drains a message over 10 MB in either framing and answers an error with its id (null when none is found), then serves the next', async () => {
    raw = rawServer();
    raw.child.stdin.write(`${INITIALIZE}\n${INITIALIZED}\n`);
    expect(await raw.next()).toMatchObject({ framing: 'line', message: { id: 1 } });

    // A Content-Length body of 11 MB, its id at the start.
    const start = '{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"loom_agent_helper","arguments":{"message":"';
    const end = '"}}}';
    const size = 11 * 1024 * 1024;
    raw.child.stdin.write(framed(start + 'x'.repeat(size - start.length - end.length) + end));
    expect(await raw.next()).toEqual({
      framing: 'content-length',
      message: {
        jsonrpc: '2.0',
        id: 'big-1',
        error: { code: -32600, message: 'MCP message of 11,534,336 bytes is over the 10 MB limit (10,485,760 bytes)', data: { size, limit: 10_485_760 } },
      },
    });
    raw.child.stdin.write(framed(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' })));
    expect(await raw.next()).toMatchObject({ framing: 'content-length', message: { id: 5, result: {} } });

    // A line of 11 MB that is no JSON at all: Parse error, id null.
    raw.child.stdin.write(`${'y'.repeat(size)}\n`);
    expect(await raw.next()).toMatchObject({
      framing: 'line',
      message: { id: null, error: { code: -32700, message: 'MCP message of 11,534,336 bytes is over the 10 MB limit (10,485,760 bytes)' } },
    });
    raw.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/list' })}\n`);
    expect(await raw.next()).toMatchObject({ framing: 'line', message: { id: 6, result: { tools: [{ name: 'loom_agent_helper' }] } } });
    expect(model.requests).toHaveLength(0);
    expect(raw.child.exitCode).toBeNull();
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
    await writeDaemonFile(api.host.home, {
      pid: process.pid,
      host: address.hostname,
      port: Number(address.port),
      url: api.url,
      startedAt: new Date().toISOString(),
      version: 'test',
    });
    const waiter = waitFor<string[]>((names) => names.includes('loom_agent_second'), 10_000);
    const mcp = await connect(
      'legacy',
      { LOOM_API_KEY: 'owner-secret' },
      {
        listChanged: { tools: { debounceMs: 0, onChanged: (_error, tools) => waiter.push((tools ?? []).map((tool) => tool.name)) } },
      },
    );
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
    await writeDaemonFile(api.host.home, {
      pid: process.pid,
      host: address.hostname,
      port: Number(address.port),
      url: api.url,
      startedAt: new Date().toISOString(),
      version: 'test',
    });
    const owner = await connect('legacy', { LOOM_API_KEY: 'admin-secret' });
    // Asked through this client: its session's (the connection's own conversation) is the one it reads.
    model.script([{ text: 'From the daemon.' }]);
    expect(firstText(await owner.callTool({ name: 'loom_agent_helper', arguments: { message: 'hi' } }))).toBe('From the daemon.');
    expect((await owner.listResources()).resources.map((resource) => resource.uri)).toEqual([
      'loom://agents/helper/session',
      'loom://agents/helper/turns/last',
    ]);
    const read = async (uri: string): Promise<unknown> => JSON.parse(((await owner.readResource({ uri })).contents[0] as { text: string }).text);
    expect(await read('loom://agents/helper/session')).toMatchObject({
      agent: 'helper',
      messages: [{ role: 'user', content: 'hi' }, { role: 'assistant' }],
      running: null,
    });
    expect(await read('loom://agents/helper/turns/last')).toMatchObject({
      agent: 'helper',
      turn: { message: 'hi', text: 'From the daemon.', status: 'finished' },
    });
    await expect(owner.readResource({ uri: 'loom://agents/nobody/session' })).rejects.toBeInstanceOf(ResourceNotFoundError);
    await owner.close();

    // helper-bot may reach helper-* only: "helper" is no resource of its, and reads as unknown.
    const helperBot = await connect('legacy', { LOOM_API_KEY: 'helper-secret' });
    expect((await helperBot.listResources()).resources).toEqual([]);
    await expect(helperBot.readResource({ uri: 'loom://agents/helper/turns/last' })).rejects.toMatchObject({
      code: -32602,
      data: { uri: 'loom://agents/helper/turns/last' },
    });
  }, 30_000);

  it('turns the daemon refusing a wrong key into an MCP error naming the reason', async () => {
    api = await startApi(dir.path, { env: { LOOM_API_KEY: 'owner-secret' } });
    const address = new URL(api.url);
    await writeDaemonFile(api.host.home, {
      pid: process.pid,
      host: address.hostname,
      port: Number(address.port),
      url: api.url,
      startedAt: new Date().toISOString(),
      version: 'test',
    });
    const mcp = await connect('legacy', { LOOM_API_KEY: 'wrong' });
    await expect(mcp.listTools()).rejects.toThrow(/API key is not valid/);
  }, 30_000);
});
