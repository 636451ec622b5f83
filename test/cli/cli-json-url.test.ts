import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOOM_VERSION } from '../../src/cli/index.ts';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-cli-json-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

/** A loopback port nothing listens on: an "Ollama" there does not answer. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function manifestFile(name: string, text: string): Promise<string> {
  const path = join(dir.path, `${name}.toml`);
  await writeFile(path, text);
  return path;
}

describe('agents that cannot run', () => {
  it('spawning one warns on standard error with the fix, and spawns it all the same', async () => {
    const path = await manifestFile('claude', 'name = "claude"\n[model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\n');
    const result = await runCli(home, ['agent', 'spawn', path]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^spawned claude \(/);
    expect(result.stderr).toContain(
      'warning: agent "claude" cannot run: model "anthropic/claude-haiku-4-5" ([model]) needs ANTHROPIC_API_KEY, which is not set; set ANTHROPIC_API_KEY in the daemon\'s environment and restart it',
    );
    // With the key set, nothing to warn about.
    const keyed = await runCli(home, ['agent', 'update', 'claude', path], { env: { ANTHROPIC_API_KEY: 'sk-ant-test' } });
    expect(keyed).toMatchObject({ code: 0, stderr: '' });
  });

  it('loom doctor lists each with what is wrong and the fix: a missing key, an Ollama that does not answer, no model at all', async () => {
    const port = await closedPort();
    await runCli(home, ['agent', 'spawn', await manifestFile('claude', 'name = "claude"\n[model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\n')]);
    await runCli(home, [
      'agent',
      'spawn',
      await manifestFile('local', `name = "local"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\nbase_url = "http://127.0.0.1:${port}/v1"\n`),
    ]);
    await runCli(home, ['agent', 'spawn', await manifestFile('bare', 'name = "bare"\n')]);
    await runCli(home, ['agent', 'spawn', await manifestFile('fine', 'name = "fine"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n')]);
    await writeFile(join(home, 'config.toml'), '[daemon]\nport = 0\n');

    const result = await runCli(home, ['doctor'], { env: { OPENAI_API_KEY: 'sk-test' } });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      '! agent "claude" cannot run: model "anthropic/claude-haiku-4-5" ([model]) needs ANTHROPIC_API_KEY, which is not set\n    fix: set ANTHROPIC_API_KEY in the daemon\'s environment and restart it, or name the variable that holds the key in [model].api_key_env\n',
    );
    expect(result.stdout).toContain(
      `! agent "local" cannot run: model "ollama/llama3.2" ([model]): nothing answers at http://127.0.0.1:${port}/v1\n    fix: start the model server at http://127.0.0.1:${port}/v1, or set [model].base_url to where it runs\n`,
    );
    expect(result.stdout).toContain('! agent "bare" cannot run: it has no [model] and config.toml has no [default_model]\n    fix: run `loom init`');
    expect(result.stdout).not.toContain('agent "fine"');

    const json = await runCli(home, ['doctor', '--json'], { env: { OPENAI_API_KEY: 'sk-test' } });
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      checks: { ok: boolean; text: string }[];
      agents: { name: string; problems: { kind: string; fix: string }[] }[];
    };
    expect(report.ok).toBe(true);
    expect(report.checks.map((check) => check.text)).toContain(`home folder ${home}, config valid`);
    expect(report.agents.map((agent) => [agent.name, agent.problems.map((problem) => problem.kind)])).toEqual([
      ['claude', ['missing-key']],
      ['local', ['unreachable']],
      ['bare', ['no-model']],
    ]);
  });

  it('an agent without [model] is checked on [default_model], and the fix names that', async () => {
    const port = await closedPort();
    await runCli(home, ['init']);
    await writeFile(join(home, 'config.toml'), `[default_model]\nprovider = "ollama"\nmodel = "llama3.2"\nbase_url = "http://127.0.0.1:${port}/v1"\n`);
    const result = await runCli(home, ['agent', 'spawn', await manifestFile('bare', 'name = "bare"\n')]);
    expect(result.stderr).toContain(
      `warning: agent "bare" cannot run: model "ollama/llama3.2" ([default_model] (config.toml)): nothing answers at http://127.0.0.1:${port}/v1; start the model server at http://127.0.0.1:${port}/v1, or set [default_model].base_url to where it runs`,
    );
  });
});

describe('--json on commands that print data', () => {
  it('loom init --json prints where the home is and the default model it chose (none here)', async () => {
    const result = await runCli(home, ['init', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      home,
      config: join(home, 'config.toml'),
      config_written: true,
      database: join(home, 'data', 'loom.db'),
      default_model: null,
      default_model_source: null,
    });
    const chosen = JSON.parse((await runCli(join(dir.path, 'other'), ['init', '--json'], { env: { ANTHROPIC_API_KEY: 'sk-ant-test' } })).stdout) as {
      default_model: unknown;
      default_model_source: string;
    };
    expect(chosen).toMatchObject({ default_model: { provider: 'anthropic', model: 'claude-haiku-4-5' }, default_model_source: 'found ANTHROPIC_API_KEY' });
  });

  it('loom stop --json says whether it stopped one', async () => {
    const result = await runCli(home, ['stop', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ stopped: false, pid: null });
  });
});

describe('--url: the daemon to talk to', () => {
  let daemon: RunningDaemon;
  let daemonHome: string;

  beforeEach(async () => {
    daemonHome = join(dir.path, 'daemon-home');
    daemon = await startDaemon({
      home: resolveLoomHome({ LOOM_HOME: daemonHome }, dir.path),
      config: ConfigSchema.parse({}),
      env: TEST_KEYS,
      logger: createSilentLogger(),
      version: 'test',
      port: 0,
    });
  });
  afterEach(async () => {
    await daemon.stop();
  });

  it('sends commands to that daemon instead of this home, as LOOM_URL does', async () => {
    const path = await manifestFile('remote', 'name = "remote"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n');
    const spawned = await runCli(home, ['--url', daemon.info.url, 'agent', 'spawn', path, '--json']);
    expect(spawned.code).toBe(0);
    expect(daemon.host.kernel.list().map((agent) => agent.name)).toEqual(['remote']);
    // The flag may stand after the command too.
    const listed = await runCli(home, ['agent', 'list', '--json', '--url', `${daemon.info.url}/`]);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((agent) => agent.name)).toEqual(['remote']);
    const byEnv = await runCli(home, ['agent', 'list', '--json'], { env: { LOOM_URL: daemon.info.url } });
    expect((JSON.parse(byEnv.stdout) as { name: string }[]).map((agent) => agent.name)).toEqual(['remote']);
    // This home itself has none.
    expect(JSON.parse((await runCli(home, ['agent', 'list', '--json'])).stdout)).toEqual([]);
  });

  it("warns once about an agent the daemon cannot run (its environment, not the shell's)", async () => {
    const path = await manifestFile(
      'keyless',
      'name = "keyless"\n[model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\napi_key_env = "TEAM_ANTHROPIC_KEY"\n',
    );
    const result = await runCli(home, ['--url', daemon.info.url, 'agent', 'spawn', path], { env: { TEAM_ANTHROPIC_KEY: 'set here, not there' } });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      'warning: agent "keyless" cannot run: model "anthropic/claude-haiku-4-5" ([model]) needs TEAM_ANTHROPIC_KEY, which is not set; set TEAM_ANTHROPIC_KEY in the daemon\'s environment and restart it\n',
    );
  });

  it('loom status asks that daemon, and exits 1 when nothing answers there', async () => {
    const up = await runCli(home, ['--url', daemon.info.url, 'status', '--json']);
    expect(up.code).toBe(0);
    const status = JSON.parse(up.stdout) as { cluster: { self: string; nodes: unknown[] } };
    expect(status).toEqual({
      running: true,
      url: daemon.info.url,
      version: LOOM_VERSION,
      agents: 0,
      cluster: { store: 'sqlite', self: status.cluster.self, leader: status.cluster.self, nodes: status.cluster.nodes, jobs: null },
    });
    expect(status.cluster.nodes).toEqual([expect.objectContaining({ id: status.cluster.self, url: daemon.info.url, leader: true, self: true, alive: true })]);
    const port = await closedPort();
    const down = await runCli(home, ['--url', `http://127.0.0.1:${port}`, 'status']);
    expect(down).toMatchObject({ code: 1, stdout: `No Loom daemon answers at http://127.0.0.1:${port}.\n` });
  });

  it('refuses what is not an http(s) URL, and loom stop of a daemon it cannot signal, with exit status 2', async () => {
    const bad = await runCli(home, ['--url', 'localhost:4200', 'agent', 'list']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--url: expected the daemon\'s http(s) URL, e.g. http://127.0.0.1:4200, got "localhost:4200"');
    const stop = await runCli(home, ['--url', daemon.info.url, 'stop']);
    expect(stop.code).toBe(2);
    expect(stop.stderr).toContain(`not the one at ${daemon.info.url} (--url or LOOM_URL); stop that one where it runs`);
  });
});
