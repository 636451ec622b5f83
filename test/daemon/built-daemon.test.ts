import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildDaemon } from '../../scripts/build-daemon.ts';
import { type BuildRecord, daemonEntry } from '../../src/config/daemon-build.ts';
import { INSTALL_DIR } from '../../src/config/installation.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

// The daemon as `npm install` builds it, run as `bin/loom.js` runs it: built into a folder of its
// own beside dist/daemon/ (two folders below the installation, as the build must be), so that
// other tests' daemons keep what they run.
const outDir = join(INSTALL_DIR, 'dist', `test-build-${process.pid}`);
const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let daemon: ChildProcess | undefined;
let receiver: OtlpReceiver | undefined;

beforeAll(async () => {
  await buildDaemon(outDir);
}, 60_000);
afterAll(async () => {
  await rm(outDir, { recursive: true, force: true });
});
beforeEach(async () => {
  dir = await makeTempDir('loom-built-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  if (daemon !== undefined && daemon.exitCode === null && daemon.signalCode === null) {
    const exited = new Promise((resolve) => daemon?.once('exit', resolve));
    daemon.kill('SIGKILL');
    await exited;
  }
  await receiver?.close();
  receiver = undefined;
  await dir.remove();
});

/** `loom start --foreground` from the build; resolves with its URL and what it has logged so far. */
async function startBuilt(env: Record<string, string> = {}): Promise<{ url: string; output: () => string }> {
  const launcher = `const { main } = await import(${JSON.stringify(pathToFileURL(join(outDir, 'main.js')).href)}); process.exitCode = await main(process.argv.slice(1));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', launcher, 'start', '--foreground', '--port', '0'], {
    env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: home, ...TEST_KEYS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  daemon = child;
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const url = await waitFor('the built daemon to answer', async () => {
    const { url } = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { url: string };
    return (await fetch(`${url}/api/health`)).ok ? url : undefined;
  });
  return { url, output: () => output };
}

describe('the built daemon (dist/)', () => {
  it('records what it was built from, so that bin/loom.js runs it, and bundles no library that another loads from node_modules', () => {
    const record = JSON.parse(readFileSync(join(outDir, 'build.json'), 'utf8')) as BuildRecord;
    // A module that only re-exports yields no code of its own, and is read all the same.
    expect(record.sources.map((source) => source.path)).toEqual(
      expect.arrayContaining(['package.json', 'package-lock.json', 'src/cli/main.ts', 'src/kernel/kernel.ts', 'src/errors/index.ts']),
    );
    expect(daemonEntry(INSTALL_DIR, {}, outDir)).toEqual({ path: join(outDir, 'main.js'), built: true });
    // zod is shared with the AI SDK and the MCP SDKs: bundling it means bundling them too.
    expect(record.inlined).toEqual(expect.arrayContaining(['zod', 'hono', 'ai', '@modelcontextprotocol/server', 'pino', 'sonic-boom']));
    // Loaded at every start: bundled rather than resolved and read file by file from node_modules.
    expect(record.inlined).toEqual(expect.arrayContaining(['prom-client', '@opentelemetry/api', '@opentelemetry/sdk-trace-base']));
    expect(record.inlined).not.toContain('isolated-vm');
  });

  it('answers a chat through a provider, counts and traces it, serves the dashboard and MCP, and says it runs built', async () => {
    const manifest = join(dir.path, 'teller.toml');
    await writeFile(manifest, `name = "teller"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`);
    expect((await runCli(home, ['agent', 'spawn', manifest], { env: TEST_KEYS })).code).toBe(0);
    receiver = await startOtlpReceiver();
    const built = await startBuilt({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });

    const version = (JSON.parse(readFileSync(join(INSTALL_DIR, 'package.json'), 'utf8')) as { version: string }).version;
    expect(await (await fetch(`${built.url}/api/health`)).json()).toMatchObject({ status: 'ok', version, agents: 1 });
    await waitFor('the start line', () => built.output().includes('"code":"built"'));
    // The bundled logger writes the daemon's log file too.
    expect(await readFile(join(home, 'logs', 'daemon.log'), 'utf8')).toContain('"code":"built"');

    server.script([{ text: 'Built and answering.' }]);
    const reply = await fetch(`${built.url}/api/agents/teller/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Are you there?' }),
    });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toMatchObject({ text: 'Built and answering.', model: 'openai/gpt-4o' });
    expect(server.requests.at(-1)?.body).toMatchObject({ model: 'gpt-4o' });
    // A streamed reply is written on Node's response by the bundled code: whole, then its end.
    server.script([{ text: 'Streamed too.' }]);
    const streamed = await fetch(`${built.url}/api/agents/teller/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ message: 'And streamed?' }),
    });
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    const events = await streamed.text();
    expect(events).toMatch(/^event: run-start\n/);
    expect(events).toMatch(/event: run-finish\ndata: \{"type":"run-finish","result":\{"text":"Streamed too\."/);
    // The bundled metrics and tracing libraries at work: the turn counted, its spans exported.
    const metrics = await fetch(`${built.url}/metrics`);
    expect(await metrics.text()).toMatch(/^loom_turns_total\{[^}]*agent="teller"[^}]*\} 2$/m);
    await waitFor('the turn spans over OTLP', () => receiver?.spans.some((span) => span.name === 'invoke_agent teller'));
    expect(receiver.spans.map((span) => span.name)).toContain('chat gpt-4o');

    const page = await fetch(`${built.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');

    const client = new Client({ name: 'built-daemon-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${built.url}/mcp`)));
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('loom_agent_teller');
    } finally {
      await client.close();
    }
  }, 60_000);
});
