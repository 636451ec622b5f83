import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CodeModuleError } from '../../src/errors/index.ts';
import { createRecordingLogger, type RecordingLogger } from '../support/recording-logger.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();

/** The environment Loom is given: the test keys and PATH (to find python3). */
const ENV = { ...TEST_KEYS, PATH: process.env['PATH'] ?? '/usr/bin:/bin' };

/**
 * A script that breaks the protocol on request, writing raw lines past the helper. Lines meant to
 * arrive together go out in one write, so Loom reads them together.
 */
const SCRIPT = `import json, os, sys, time
import loom_agent

out = sys.__stdout__

def raw(*lines):
    out.write("".join(json.dumps(line) + "\\n" for line in lines))
    out.flush()

def handle(request, host):
    message = request["message"]
    if message == "pid":
        return "pid %d" % os.getpid()
    if message == "twice":
        raw({"type": "reply", "reply": {"text": "first of two"}}, {"type": "reply", "reply": {"text": "second of two"}})
        return "third"
    if message == "bogus":
        raw({"type": "bogus"})
        # The real reply comes late, when the next message may already be waiting.
        time.sleep(0.5)
        return "the answer to bogus"
    calls = [{"type": "host_call", "id": 100 + index, "call": {"call": "llm", "prompt": "call %d" % index}} for index in range(8)]
    if message == "fire":
        # Eight model calls, and the reply before any is answered.
        raw(*calls)
        return "fired"
    if message == "fire late":
        # Two model calls, the reply, and a model call after it.
        raw(*calls[:2], {"type": "reply", "reply": {"text": "fired two"}}, calls[2])
        return "unreachable"
    return "py: " + message

loom_agent.run(handle)
`;

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let logger: RecordingLogger;

beforeEach(async () => {
  dir = await makeTempDir('loom-python-protocol-');
  logger = createRecordingLogger();
  host = await openTestHost(dir.path, {}, ENV, { logger });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** Spawns an agent running `source` as its script. */
async function spawnScript(name: string, source: string, extra = ''): Promise<void> {
  const path = join(dir.path, `${name}.py`);
  await writeFile(path, source);
  await host.kernel.spawn(manifest(`name = "${name}"\nmodule = "python:${path}"\n[capabilities]\nshell = ["python3"]\n${extra}\n`));
}

/** The error `promise` rejects with (undefined when it resolves). */
async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** The warnings logged about lines out of turn. */
function outOfTurnWarnings(): string[] {
  return logger.entries.filter((entry) => entry.level === 'warn' && entry.message?.includes('its process is replaced')).map((entry) => entry.message ?? '');
}

/** The warnings about lines out of turn once there are `count` (Loom reads a script's output as it comes). */
function nextOutOfTurnWarnings(count: number): Promise<string[]> {
  return waitFor(`${count} warning(s) of a line out of turn`, () => (outOfTurnWarnings().length >= count ? outOfTurnWarnings() : undefined));
}

describe('a python: script that answers out of turn', () => {
  it('replaces its process on a reply while no message is waiting, so that reply answers no later message', async () => {
    await spawnScript('chatty', SCRIPT);
    const before = (await host.kernel.send('chatty', 'pid')).text;
    expect((await host.kernel.send('chatty', 'twice')).text).toBe('first of two');
    // The second reply came with nothing waiting: the process that sent it is gone.
    expect(await nextOutOfTurnWarnings(1)).toEqual([
      expect.stringContaining(
        'agent "chatty"\'s script sent a reply line while no message was being answered ("{\\"type\\": \\"reply\\", \\"reply\\": {\\"text\\": \\"second of two\\"}}")',
      ),
    ]);
    expect((await host.kernel.send('chatty', 'hello')).text).toBe('py: hello');
    expect((await host.kernel.send('chatty', 'pid')).text).not.toBe(before);
  });

  it('fails the message on a line of an unknown type and replaces its process, so its late reply does not answer the next message', async () => {
    await spawnScript('bogus', SCRIPT);
    const error = await caught(host.kernel.send('bogus', 'bogus'));
    // Sent at once, while the old process still owes "the answer to bogus".
    expect((await host.kernel.send('bogus', 'next caller')).text).toBe('py: next caller');
    expect(error).toBeInstanceOf(CodeModuleError);
    expect(error).toMatchObject({ fault: 'protocol' });
    expect((error as Error).message).toBe(
      'agent "bogus"\'s script sent a line of a type the protocol does not have ("{\\"type\\": \\"bogus\\"}"); its process is replaced',
    );
    expect(outOfTurnWarnings()).toEqual([(error as Error).message]);
  });
});

describe('a python: script whose host calls are still being answered when it replies', () => {
  /** The agent's model: the scripted server (known once the tests run). */
  const model = (): string => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"`;

  it('ends the message only once they are, so every model call is made within its turn and counted', async () => {
    await spawnScript('eager', SCRIPT, model());
    server.script(Array.from({ length: 8 }, (_, index) => ({ text: `answer ${index}`, usage: { inputTokens: 100, outputTokens: 10 } })));
    const result = await host.kernel.send('eager', 'fire');
    expect(result).toMatchObject({ text: 'fired', iterations: 8, usage: { inputTokens: 800, outputTokens: 80 } });
    expect(server.requests).toHaveLength(8);
    expect(await host.store.usage.list()).toHaveLength(8);
    // Nothing was out of turn: the same process answers on.
    expect(outOfTurnWarnings()).toEqual([]);
    expect((await host.kernel.send('eager', 'again')).text).toBe('py: again');
  });

  it('refuses a host call sent after its message was answered, never running it, and replaces the process', async () => {
    await spawnScript('late', SCRIPT, model());
    server.script([
      { text: 'first', usage: { inputTokens: 100, outputTokens: 10 } },
      { text: 'second', usage: { inputTokens: 100, outputTokens: 10 } },
    ]);
    const before = (await host.kernel.send('late', 'pid')).text;
    const result = await host.kernel.send('late', 'fire late');
    expect(result).toMatchObject({ text: 'fired two', iterations: 2, usage: { inputTokens: 200, outputTokens: 20 } });
    expect(server.requests).toHaveLength(2);
    expect(await nextOutOfTurnWarnings(1)).toEqual([expect.stringContaining('agent "late"\'s script sent a host_call line after its message was answered')]);
    expect((await host.kernel.send('late', 'pid')).text).not.toBe(before);
    expect(server.requests).toHaveLength(2);
  });
});
