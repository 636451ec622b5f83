import { Readable } from 'node:stream';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerA2aCommands } from '../../src/cli/commands/a2a-commands.ts';
import type { CliIo } from '../../src/cli/cli-io.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml } from '../http/api-harness.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';
import { ExternalAgentRegistry, listExternalAgents } from '../../src/a2a/index.ts';
import { ensureLoomHome, resolveLoomHome } from '../../src/config/index.ts';
import { writeDaemonFile } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { startHttpServer } from '../../src/http/index.ts';
import { Hono } from 'hono';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: A2aHarness;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-cli-');
  api = await startA2a(dir.path);
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

async function run(...args: string[]): Promise<string> {
  let out = '';
  const io: CliIo = {
    stdout: (text) => (out += text),
    stderr: () => undefined,
    stdin: Readable.from([]),
    env: { LOOM_HOME: `${dir.path}/cli-home` },
    cwd: dir.path,
  };
  const program = new Command().exitOverride();
  registerA2aCommands(program, io);
  await program.parseAsync(['node', 'loom', ...args]);
  return out;
}

describe('loom a2a', () => {
  it('discovers a Loom agent card and sends it a task by URL', async () => {
    await api.host.kernel.spawn(manifest(agentToml('helper', model.url)));
    expect(await run('a2a', 'discover', `${api.url}/a2a/helper/.well-known/agent-card.json`)).toContain('JSONRPC 1.0');
    model.script([{ text: 'Done.' }]);
    expect(await run('a2a', 'send', api.url, 'Do it')).toBe('Done.\n');
  });

  it('lists no external agents without config', async () => {
    expect(await run('a2a', 'list', '--json')).toBe(`${JSON.stringify({ agents: [], total: 0 }, null, 2)}\n`);
  });

  it("shows the running daemon's view of its external agents, not a discovery of its own", async () => {
    await api.host.kernel.spawn(manifest(agentToml('helper', model.url)));
    // The daemon discovered "peer" (its config); the CLI's own config lists no external agent.
    const registry = new ExternalAgentRegistry();
    registry.configure([{ name: 'peer', url: `${api.url}/a2a/helper` }]);
    await registry.discoverAll(createSilentLogger());
    const daemonApp = new Hono().get('/api/a2a/external', (c) => c.json(listExternalAgents(registry)));
    const daemon = await startHttpServer(daemonApp, { host: '127.0.0.1', port: 0 });
    try {
      const home = resolveLoomHome({ LOOM_HOME: `${dir.path}/cli-home` }, dir.path);
      await ensureLoomHome(home);
      await writeDaemonFile(home, {
        pid: process.pid,
        host: '127.0.0.1',
        port: daemon.port,
        url: daemon.url,
        startedAt: new Date().toISOString(),
        version: 'test',
      });
      const listing = JSON.parse(await run('a2a', 'list', '--json')) as { agents: { name: string; status: string; url: string }[]; total: number };
      expect(listing).toMatchObject({ total: 1, agents: [{ name: 'peer', status: 'discovered', url: `${api.url}/a2a/helper` }] });
      expect(await run('a2a', 'list')).toMatch(/^NAME +STATUS +URL +SKILLS\npeer +discovered +http/);
    } finally {
      await daemon.close();
    }
  });
});
