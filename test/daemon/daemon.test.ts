import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOOM_VERSION } from '../../src/cli/index.ts';
import { daemonEntry } from '../../src/config/daemon-build.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';

const bin = join(import.meta.dirname, '../../bin/loom.js');
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let children: ChildProcess[];

beforeEach(async () => {
  dir = await makeTempDir('loom-daemon-');
  home = join(dir.path, 'home');
  children = [];
});

afterEach(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await runCli(home, ['stop']);
  await dir.remove();
});

interface DaemonFile {
  pid: number;
  url: string;
}

/** Waits until the daemon file names a daemon that answers. */
function waitForDaemon(): Promise<DaemonFile> {
  return waitFor('the daemon to come up', async () => {
    const info = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as DaemonFile;
    return (await fetch(`${info.url}/api/health`)).ok ? info : undefined;
  });
}

function startForeground(
  env: Record<string, string> = {},
  flags: string[] = [],
): { child: ChildProcess; output: () => string; stdout: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [bin, 'start', '--foreground', '--port', '0', ...flags], {
    env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, stdout: () => stdout, exited };
}

const manifest = 'name = "keeper"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n';

describe('the daemon', () => {
  it('serves the API, writes how to reach it, and stops cleanly on SIGTERM', async () => {
    const daemon = startForeground();
    const info = await waitForDaemon();
    expect(info.pid).toBe(daemon.child.pid);
    const health = (await (await fetch(`${info.url}/api/health`)).json()) as { status: string };
    expect(health.status).toBe('ok');
    const status = JSON.parse((await runCli(home, ['status', '--json'])).stdout) as { running: boolean; url: string };
    expect(status).toMatchObject({ running: true, url: info.url });

    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    expect(existsSync(join(home, 'daemon.json'))).toBe(false);
    expect(JSON.parse((await runCli(home, ['status', '--json'])).stdout)).toMatchObject({ running: false });
  });

  it('says which model keys and local servers it looked for when it has none', async () => {
    const daemon = startForeground();
    await waitForDaemon();
    daemon.child.kill('SIGTERM');
    await daemon.exited;
    expect(daemon.output()).toContain('No model key found: looked for ANTHROPIC_API_KEY');
    expect(daemon.output()).toContain('Ollama at http://127.0.0.1:11434');
  });

  it('prints only JSON lines on standard output when it is not a terminal, and the same records in the log file', async () => {
    const daemon = startForeground();
    await waitForDaemon();
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    const lines = daemon.stdout().trim().split('\n');
    const records = lines.map((line) => JSON.parse(line) as { msg: string });
    expect(records.map((record) => record.msg)).toEqual([expect.stringMatching(/^Loom is listening at http:\/\/127\.0\.0\.1:\d+/), 'Loom stopped']);
    const file = (await readFile(join(home, 'logs', 'daemon.log'), 'utf8')).trim().split('\n');
    expect(file.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(records.map((record) => record.msg));
  });

  it('runs the built daemon exactly when it is up to date with the sources, and says which it runs', async () => {
    // After `npm install` (as in CI) the build is up to date; after an edit without `npm run build`, the sources run.
    const expected = daemonEntry(join(import.meta.dirname, '../..'), {}).built ? 'built' : 'sources';
    const daemon = startForeground();
    await waitForDaemon();
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    expect(daemon.stdout()).toContain(`"code":"${expected}"`);
    const forced = startForeground({ LOOM_FROM_SOURCES: '1' });
    await waitForDaemon();
    forced.child.kill('SIGTERM');
    expect(await forced.exited).toBe(0);
    expect(forced.stdout()).toContain('"code":"sources","sources_why":"LOOM_FROM_SOURCES=1"');
  });

  it('prints readable lines with --log-format pretty (time, level, message) while the log file keeps JSON lines', async () => {
    const daemon = startForeground({}, ['--log-format', 'pretty']);
    const info = await waitForDaemon();
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    const lines = daemon.stdout().trim().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^\\[\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\] INFO: Loom is listening at ${info.url.replace(/[.]/g, '\\.')}\\. No model key found`),
    );
    expect(lines).toContain(`Loom ${LOOM_VERSION} (pid ${info.pid}), JSON logs in ${join(home, 'logs', 'daemon.log')}. Press Ctrl-C to stop.`);
    expect(lines.at(-1)).toMatch(/INFO: Loom stopped$/);
    expect(daemon.stdout()).not.toContain('{"level"');
    expect(await readFile(join(home, 'logs', 'daemon.log'), 'utf8')).toContain('"msg":"Loom stopped"');
  });

  it('refuses an unknown --log-format with exit status 2', async () => {
    const daemon = startForeground({}, ['--log-format', 'fancy']);
    expect(await daemon.exited).toBe(2);
    expect(daemon.output()).toContain('--log-format: expected one of auto, json, pretty, got "fancy"');
  });

  it('comes back with the same agents running after a restart', async () => {
    const first = startForeground();
    const info = await waitForDaemon();
    const spawned = await fetch(`${info.url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: manifest });
    expect(spawned.status).toBe(201);
    first.child.kill('SIGTERM');
    await first.exited;

    startForeground();
    const again = await waitForDaemon();
    const agents = (await (await fetch(`${again.url}/api/agents`)).json()) as { name: string; state: string }[];
    expect(agents.map((agent) => [agent.name, agent.state])).toEqual([['keeper', 'running']]);
  });

  it('refuses to start a second daemon on the same home', async () => {
    startForeground();
    const info = await waitForDaemon();
    const second = startForeground();
    expect(await second.exited).toBe(2);
    expect(second.output()).toContain(`a Loom daemon already serves ${home} at ${info.url}`);
  });

  it('starts in the background with `loom start` and stops with `loom stop`', async () => {
    const started = await runCli(home, ['start', '--port', '0'], { env: { PATH: process.env['PATH'] ?? '' } });
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/^Loom is running at http:\/\/127\.0\.0\.1:\d+ \(pid \d+\)/);
    const info = await waitForDaemon();
    const stopped = await runCli(home, ['stop']);
    expect(stopped).toMatchObject({ code: 0, stdout: `Loom stopped (pid ${info.pid}).\n` });
    expect(existsSync(join(home, 'daemon.json'))).toBe(false);
  });
});
