import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, ensureLoomHome, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let daemon: RunningDaemon;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-daemon-');
  home = join(dir.path, 'home');
  const loomHome = resolveLoomHome({ LOOM_HOME: home }, dir.path);
  // As `loom start` does: the home and its config.toml are there before the daemon starts.
  await ensureLoomHome(loomHome);
  daemon = await startDaemon({ home: loomHome, config: ConfigSchema.parse({}), env: TEST_KEYS, logger: createSilentLogger(), version: 'test', port: 0 });
});

afterEach(async () => {
  await daemon.stop();
  await dir.remove();
});

describe('CLI commands while a daemon runs', () => {
  it('act through the daemon over HTTP: spawn, list, send, usage', async () => {
    const manifest = join(dir.path, 'remote.toml');
    await writeFile(manifest, `name = "remote"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`);
    const spawned = await runCli(home, ['agent', 'spawn', manifest, '--json']);
    expect(spawned.code).toBe(0);
    // The daemon's own kernel holds the agent: the command went to it, not to a kernel of its own.
    expect(daemon.host.kernel.list().map((agent) => agent.name)).toEqual(['remote']);

    const listed = JSON.parse((await runCli(home, ['agent', 'list', '--json'])).stdout) as { name: string }[];
    expect(listed.map((agent) => agent.name)).toEqual(['remote']);

    server.script([{ text: 'Hello from the daemon.' }, { text: 'Streamed too.' }]);
    expect((await runCli(home, ['send', 'remote', 'hi'])).stdout).toBe('Hello from the daemon.\n');
    const streamed = await runCli(home, ['send', 'remote', 'again', '--stream']);
    expect(streamed.stdout).toContain('Streamed too.');
    expect(streamed.stderr).toMatch(/\[\d+ in · \d+ out · \$[\d.]+ · 1 iteration · openai\/gpt-4o\]/);

    const usage = JSON.parse((await runCli(home, ['usage', '--json'])).stdout) as { agent: string; calls: number }[];
    expect(usage).toMatchObject([{ agent: 'remote', calls: 2 }]);
  });

  it("exit 2 with the daemon's message for bad input", async () => {
    const result = await runCli(home, ['agent', 'show', 'ghost']);
    expect(result).toMatchObject({ code: 2, stderr: 'error: no agent named or with id "ghost"\n' });
    const manifest = join(dir.path, 'dup.toml');
    await writeFile(manifest, 'name = "dup"\n');
    await runCli(home, ['agent', 'spawn', manifest]);
    const again = await runCli(home, ['agent', 'spawn', manifest]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('an agent with that name already exists');
  });
});
