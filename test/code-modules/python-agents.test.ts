import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentStateError, CapabilityDeniedError, CodeModuleError, ManifestError } from '../../src/errors/index.ts';
import { loadManifestFile } from '../../src/manifest/index.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { runCli } from '../support/run-cli.ts';
import { createRecordingLogger, type RecordingLogger } from '../support/recording-logger.ts';
import { waitFor } from '../support/wait-for.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let logger: RecordingLogger;

/** The environment Loom is given: the test keys, PATH (to find python3) and two variables. */
const ENV = { ...TEST_KEYS, PATH: process.env['PATH'] ?? '/usr/bin:/bin', LOOM_REGION: 'eu-west', UNGRANTED_SECRET: 'hunter2' };

beforeEach(async () => {
  dir = await makeTempDir('loom-python-');
  logger = createRecordingLogger();
  host = await openTestHost(dir.path, {}, ENV, { logger });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** Writes `source` as a script in the test folder and gives its manifest. */
async function pythonAgent(name: string, source: string, extra = '[capabilities]\nshell = ["python3"]'): Promise<string> {
  const path = join(dir.path, `${name}.py`);
  await writeFile(path, source);
  return `name = "${name}"\nmodule = "python:${path}"\n${extra}\n`;
}

const HANDLER = `import json, os, sys, time
import loom_agent

def handle(request, host):
    message = request["message"]
    if message == "env":
        return json.dumps(sorted(os.environ.keys()))
    if message == "cwd":
        return os.getcwd()
    if message == "session":
        return json.dumps(request["session"])
    if message == "caller":
        return json.dumps(request["caller"])
    if message == "raise":
        raise ValueError("no such thing")
    if message == "exit":
        sys.exit(7)
    if message == "sleep":
        time.sleep(60)
    if message == "huge":
        return "x" * 2000000
    if message == "garbage":
        sys.__stdout__.write("hello, not json\\n")
        sys.__stdout__.flush()
        return "unreachable"
    if message.startswith("tool "):
        name, _, payload = message[5:].partition(" ")
        try:
            return "ok: " + host.tool(name, json.loads(payload or "{}"))
        except loom_agent.HostCallError as error:
            return "refused: %s" % error
    print("printed, not answered")
    host.log("answering " + message)
    return "py: " + message

loom_agent.run(handle)
`;

describe('a python: agent', () => {
  it('answers through the helper module; print() goes to the log, not into the reply', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('snake', HANDLER)));
    const result = await host.kernel.send('snake', 'hello');
    expect(result).toMatchObject({ text: 'py: hello', iterations: 0, costUsd: 0 });
    expect((await host.kernel.send('snake', 'again')).text).toBe('py: again');
    expect(JSON.parse((await host.kernel.send('snake', 'session')).text)).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'py: hello' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: 'py: again' },
    ]);
    expect(JSON.parse((await host.kernel.send('snake', 'caller')).text)).toEqual({ kind: 'user', role: 'owner' });
  });

  it('starts with a cleared environment (PATH, the helper, what env_read grants) in its workspace', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('env', HANDLER, '[capabilities]\nshell = ["python3"]\nenv_read = ["LOOM_REGION"]')));
    const keys = JSON.parse((await host.kernel.send('env', 'env')).text) as string[];
    expect(keys).toContain('LOOM_REGION');
    expect(keys).toContain('PATH');
    expect(keys).not.toContain('UNGRANTED_SECRET');
    expect(keys).not.toContain('OPENAI_API_KEY');
    expect((await host.kernel.send('env', 'cwd')).text).toBe(join(dir.path, 'home', 'workspaces', 'env'));
  });

  it('calls tools through the tool runner: refused and audited without the grant, run with it', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('caller', HANDLER, '[capabilities]\nshell = ["python3"]\ntools = ["file_read"]')));
    const secret = join(dir.path, 'secret.txt');
    await writeFile(secret, 'the launch codes');
    const refused = (await host.kernel.send('caller', `tool file_read {"path": "${secret}"}`)).text;
    expect(refused).toContain(`refused: agent "caller" is not granted [capabilities].file_read "${secret}"`);
    expect((await host.kernel.send('caller', 'tool shell_exec {"command": "id"}')).text).toMatch(/^refused: .*shell_exec/);
    expect(await host.store.events.list({ type: 'tool-deny' })).toHaveLength(2);
    await writeFile(join(dir.path, 'home', 'workspaces', 'caller', 'notes.txt'), 'in the workspace');
    expect((await host.kernel.send('caller', 'tool file_read {"path": "notes.txt"}')).text).toBe('ok: in the workspace');
  });

  it("answers a handler's exception as an error and goes on", async () => {
    await host.kernel.spawn(manifest(await pythonAgent('raiser', HANDLER)));
    await expect(host.kernel.send('raiser', 'raise')).rejects.toThrow('agent "raiser"\'s script answered with an error: ValueError: no such thing');
    expect((await host.kernel.send('raiser', 'fine')).text).toBe('py: fine');
  });

  it('answers the message it was on with an error when the script dies, keeps the message, and starts it again for the next', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('mortal', HANDLER)));
    await expect(host.kernel.send('mortal', 'exit')).rejects.toThrow(/agent "mortal"'s script exited \(code 7\) before it answered/);
    expect(await host.store.events.list({ type: 'code-module-fail' })).toMatchObject([{ data: { name: 'mortal', fault: 'exited' } }]);
    expect((await host.kernel.session('mortal')).messages).toMatchObject([
      { role: 'user', content: 'exit', providerOptions: { loom: { turn: { status: 'failed' } } } },
      { role: 'assistant', content: [{ type: 'text', text: expect.stringMatching(/^\[No reply: .*exited/) as string }] },
    ]);
    expect((await host.kernel.send('mortal', 'alive?')).text).toBe('py: alive?');
  });

  it('fails a message when the script prints a line that is not the protocol', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('noisy', HANDLER)));
    const error = await host.kernel.send('noisy', 'garbage').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CodeModuleError);
    expect((error as CodeModuleError).fault).toBe('protocol');
    expect((error as Error).message).toContain('printed a line that is not a protocol message');
    expect((error as Error).message).toContain('"hello, not json"');
    expect((await host.kernel.send('noisy', 'after')).text).toBe('py: after');
  });

  it('fails a message whose reply is over [code].max_reply_bytes', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('verbose', HANDLER, '[capabilities]\nshell = ["python3"]\n[code]\nmax_reply_bytes = 100000')));
    const error = await host.kernel.send('verbose', 'huge').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ fault: 'too-large' });
    expect((error as Error).message).toMatch(/wrote a line of \d+ bytes or more, over its limit of 100000 \(\[code\]\.max_reply_bytes\)/);
    expect((await host.kernel.send('verbose', 'short')).text).toBe('py: short');
  });

  it('starts a script that died again by itself, after a backoff', async () => {
    const source = `import os\nwith open("starts.txt", "a") as log:\n    log.write("start\\n")\n${HANDLER}`;
    await host.kernel.spawn(manifest(await pythonAgent('phoenix', source)));
    const starts = async (): Promise<number> =>
      (await readFile(join(dir.path, 'home', 'workspaces', 'phoenix', 'starts.txt'), 'utf8')).split('\n').filter(Boolean).length;
    await expect(host.kernel.send('phoenix', 'exit')).rejects.toThrow(/exited \(code 7\)/);
    expect(await starts()).toBe(1);
    // Loom logs each start as it spawns the script, in the same step as the clock wakes the restart.
    const spawned = (): number => logger.entries.filter((entry) => entry.message === 'agent "phoenix"\'s script started').length;
    expect(spawned()).toBe(1);
    await host.clock.advance(499);
    expect(spawned()).toBe(1);
    await host.clock.advance(1);
    expect(spawned()).toBe(2);
    await waitFor('the script started again to write its line', async () => (await starts()) >= 2);
    expect(await starts()).toBe(2);
    // The next message finds it warm.
    expect((await host.kernel.send('phoenix', 'hi')).text).toBe('py: hi');
    expect(await starts()).toBe(2);
  });

  it("reports a syntax error with Python's own words", async () => {
    await host.kernel.spawn(manifest(await pythonAgent('broken', 'def handle(:\n')));
    await expect(host.kernel.send('broken', 'hi')).rejects.toThrow(/exited \(code 1\) before it answered: .*SyntaxError/);
  });

  it('is stopped at its time limit, and when its agent is killed', async () => {
    await host.kernel.spawn(manifest(await pythonAgent('sleepy', HANDLER, '[capabilities]\nshell = ["python3"]\n[code]\ntimeout_ms = 2000')));
    const idleSleeps = host.clock.pending();
    const sleeping = host.kernel.send('sleepy', 'sleep');
    sleeping.catch(() => undefined);
    // The clock runs once the turn's time limit is counting on it.
    await waitFor('the time limit to be counting', () => host.clock.pending() > idleSleeps);
    await host.clock.advance(2000);
    await expect(sleeping).rejects.toThrow('agent "sleepy"\'s script ran past its time limit of 2 s ([code].timeout_ms) and was stopped');
    expect((await host.kernel.send('sleepy', 'awake')).text).toBe('py: awake');

    const again = host.kernel.send('sleepy', 'sleep');
    again.catch(() => undefined);
    await waitFor('the script to have the message', () => host.clock.pending() > idleSleeps);
    await host.kernel.kill('sleepy');
    await expect(again).rejects.toThrow(AgentStateError);
  });

  it('takes the programs its script started with it when its agent is killed or suspended, or the daemon stops', async () => {
    const source = `import subprocess
import loom_agent

def handle(request, host):
    child = subprocess.Popen(["sleep", "97"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return str(child.pid)

loom_agent.run(handle)
`;
    /** Whether `pid` is a live process (a zombie waiting for a parent that does not reap it is not). */
    const alive = (pid: number): boolean => {
      try {
        return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    const gone = (pid: number, after: string): Promise<true> => waitFor(`sleep ${pid} to be stopped after ${after}`, () => !alive(pid));
    let other: TestHost | undefined = await openTestHost(join(dir.path, 'other'), {}, ENV);
    const started: number[] = [];
    try {
      await host.kernel.spawn(manifest(await pythonAgent('killed', source)));
      await host.kernel.spawn(manifest(await pythonAgent('suspended', source)));
      await other.kernel.spawn(manifest(await pythonAgent('stopped', source)));
      for (const [on, name] of [
        [host, 'killed'],
        [host, 'suspended'],
        [other, 'stopped'],
      ] as const)
        started.push(Number((await on.kernel.send(name, 'start')).text));
      expect(started.every(alive)).toBe(true);
      await host.kernel.kill('killed');
      await gone(started[0] as number, 'a kill');
      await host.kernel.suspend('suspended');
      await gone(started[1] as number, 'a suspend');
      const closing = other;
      other = undefined;
      await closing.close();
      await gone(started[2] as number, 'the daemon stopped');
    } finally {
      for (const pid of started.filter(alive)) process.kill(pid, 'SIGKILL');
      await other?.close();
    }
  });

  it('is refused at spawn without shell_exec for its interpreter, with allow_shell = false, or without its script', async () => {
    const source = await pythonAgent('bare', HANDLER, '');
    await expect(host.kernel.spawn(manifest(source))).rejects.toThrow(CapabilityDeniedError);
    await expect(host.kernel.spawn(manifest(source))).rejects.toThrow(
      'a python: agent runs its script as a process of Loom\'s user (not in a sandbox), so it needs [capabilities].shell = ["python3"]',
    );
    await expect(
      host.kernel.spawn(manifest(await pythonAgent('policed', HANDLER, '[capabilities]\nshell = ["python3"]\n[exec_policy]\nallow_shell = false'))),
    ).rejects.toThrow('its [exec_policy].allow_shell is false');
    const missing = join(dir.path, 'gone.py');
    await expect(host.kernel.spawn(manifest(`name = "gone"\nmodule = "python:${missing}"\n[capabilities]\nshell = ["python3"]\n`))).rejects.toThrow(
      ManifestError,
    );
    expect(host.kernel.list()).toEqual([]);
  });

  it('runs the python-notes example as shipped', async () => {
    const { manifest: example } = await loadManifestFile(join(import.meta.dirname, '../../examples/agents/python-notes.toml'));
    await host.kernel.spawn(example);
    expect((await host.kernel.send('python-notes', 'notes')).text).toBe('No notes yet.');
    expect((await host.kernel.send('python-notes', 'note buy milk')).text).toBe('Noted.');
    expect((await host.kernel.send('python-notes', 'note call Ada')).text).toBe('Noted.');
    expect((await host.kernel.send('python-notes', 'notes')).text).toBe('- buy milk\n- call Ada');
  });
});

describe('the CLI, for a code agent', () => {
  it('spawns the python-notes example from its file (the script found next to it) and talks to it', async () => {
    const home = join(dir.path, 'cli-home');
    const env = { PATH: ENV.PATH };
    const spawned = await runCli(home, ['agent', 'spawn', 'examples/agents/python-notes.toml'], { cwd: join(import.meta.dirname, '../..'), env });
    expect(spawned.stderr).toBe('');
    expect(spawned.stdout).toMatch(/^spawned python-notes \(/);
    expect(await runCli(home, ['send', 'python-notes', 'note water the plants'], { env })).toMatchObject({ code: 0, stdout: 'Noted.\n' });
    expect(await runCli(home, ['send', 'python-notes', 'notes'], { env })).toMatchObject({ code: 0, stdout: '- water the plants\n' });
  });
});
