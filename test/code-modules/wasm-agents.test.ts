import { closeSync, fstatSync, openSync, readlinkSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/contracts/index.ts';
import { AgentStateError, CapabilityEscalationError, CodeModuleError, ManifestError } from '../../src/errors/index.ts';
import { loadManifestFile } from '../../src/manifest/index.ts';
import { buildWasm } from '../support/build-wasm.ts';
import { buildWat } from '../support/build-wat.ts';
import { outcomeWithin } from '../support/outcome-within.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { waitFor } from '../support/wait-for.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { readSse, type SseEvent, startApi } from '../http/api-harness.ts';

const server = useScriptedModelServer();
let modules: Awaited<ReturnType<typeof makeTempDir>>;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost | undefined;
const wasm = { echo: '', misbehave: '', wasi: '' };

beforeAll(async () => {
  modules = await makeTempDir('loom-wasm-modules-');
  wasm.echo = await buildWasm('examples/agents/wasm-echo/assembly/index.ts', join(modules.path, 'echo.wasm'));
  wasm.misbehave = await buildWasm('test/fixtures/wasm/misbehave.ts', join(modules.path, 'misbehave.wasm'));
  wasm.wasi = await buildWasm('test/fixtures/wasm/wasi-echo.ts', join(modules.path, 'wasi-echo.wasm'));
}, 60_000);
afterAll(async () => {
  await modules.remove();
});
beforeEach(async () => {
  dir = await makeTempDir('loom-wasm-');
});
afterEach(async () => {
  await host?.close();
  host = undefined;
  await dir.remove();
});

/** A wasm agent's manifest: `module` its path, then more TOML. */
function wasmAgent(name: string, path: string, extra = ''): string {
  return `name = "${name}"\nmodule = "wasm:${path}"\n${extra}\n`;
}

/** `text` as a string of the WebAssembly text format (its quotes escaped). */
function watString(text: string): string {
  return `"${text.replaceAll('"', '\\22')}"`;
}

/** Writes a module built from WebAssembly text into the test folder; its path. */
async function writeWat(name: string, text: string): Promise<string> {
  const path = join(dir.path, `${name}.wasm`);
  await writeFile(path, buildWat(text));
  return path;
}

/** The error `promise` rejects with (undefined when it resolves). */
async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

async function expectFault(promise: Promise<unknown>, fault: string, message: RegExp | string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CodeModuleError);
  expect((error as CodeModuleError).fault).toBe(fault);
  expect((error as Error).message).toMatch(message);
}

/** A WAT module's `loom_alloc`: a bump allocator over its `$heap` global. */
const BUMP_ALLOC = `(func (export "loom_alloc") (param $size i32) (result i32)
      (local $at i32)
      (local.set $at (global.get $heap))
      (global.set $heap (i32.add (global.get $heap) (local.get $size)))
      (local.get $at))`;

describe('a wasm: agent on the core ABI', () => {
  it('answers from a module next to its manifest, and keeps the exchange in its session like any turn', async () => {
    await mkdir(join(dir.path, 'agents'), { recursive: true });
    await writeFile(join(dir.path, 'agents', 'echo.toml'), wasmAgent('echo', '../modules/echo.wasm'));
    await mkdir(join(dir.path, 'modules'));
    await writeFile(join(dir.path, 'modules', 'echo.wasm'), await import('node:fs/promises').then((fs) => fs.readFile(wasm.echo)));
    host = await openTestHost(dir.path);
    const loaded = await loadManifestFile(join(dir.path, 'agents', 'echo.toml'));
    expect(loaded.manifest.module).toBe(`wasm:${join(dir.path, 'modules', 'echo.wasm')}`);
    await host.kernel.spawn(loaded.manifest);

    const result = await host.kernel.send('echo', 'hello "world"');
    expect(result).toMatchObject({ text: 'echo: hello "world"', iterations: 0, costUsd: 0, model: loaded.manifest.module });
    const session = await host.kernel.session('echo');
    expect(session.messages).toMatchObject([
      { role: 'user', content: 'hello "world"', providerOptions: { loom: { turn: { status: 'finished', model: loaded.manifest.module } } } },
      { role: 'assistant', content: 'echo: hello "world"' },
    ]);
    expect(session.messages).toHaveLength(2);
  });

  it('hands the module the session and who is calling', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('mirror', wasm.misbehave)));
    await host.kernel.send('mirror', 'first');
    const session = JSON.parse((await host.kernel.send('mirror', 'session')).text) as unknown;
    expect(session).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'echo: first' },
    ]);
    expect(JSON.parse((await host.kernel.send('mirror', 'caller')).text.slice(0, -1))).toEqual({ kind: 'user', role: 'owner' });
  });

  it('runs host calls through the tool runner: a tool it was not granted is refused and audited, one it was granted runs', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('reader', wasm.misbehave, '[capabilities]\ntools = ["file_read"]')));
    const secret = join(dir.path, 'secret.txt');
    await writeFile(secret, 'the launch codes');
    const refused = JSON.parse((await host.kernel.send('reader', `tool {"call":"tool","name":"file_read","input":{"path":"${secret}"}}`)).text) as {
      ok: boolean;
      error: string;
    };
    expect(refused.ok).toBe(false);
    expect(refused.error).toContain(`is not granted [capabilities].file_read "${secret}"`);
    const notHeld = JSON.parse((await host.kernel.send('reader', 'tool {"call":"tool","name":"shell_exec","input":{"command":"id"}}')).text) as {
      ok: boolean;
      error: string;
    };
    expect(notHeld).toMatchObject({ ok: false });
    expect(notHeld.error).toContain('shell_exec');
    expect(await host.store.events.list({ type: 'tool-deny' })).toHaveLength(2);

    const workspace = join(dir.path, 'home', 'workspaces', 'reader');
    await writeFile(join(workspace, 'notes.txt'), 'kept in the workspace');
    const read = JSON.parse((await host.kernel.send('reader', 'tool {"call":"tool","name":"file_read","input":{"path":"notes.txt"}}')).text) as {
      ok: boolean;
      text: string;
    };
    expect(read).toEqual({ ok: true, text: 'kept in the workspace' });
    const bad = JSON.parse((await host.kernel.send('reader', 'tool {"call":"teleport"}')).text) as { ok: boolean; error: string };
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(/host call is not one of tool, llm, log/);
  });

  it("makes model calls on the agent's model through llm, recorded as its usage", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(`${wasmAgent('thinker', wasm.misbehave)}[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`));
    server.script([{ text: 'forty-two', usage: { inputTokens: 100, outputTokens: 20 } }]);
    const result = await host.kernel.send('thinker', 'llm what is the answer?');
    expect(JSON.parse(result.text)).toEqual({ ok: true, text: 'forty-two' });
    expect(result).toMatchObject({ usage: { inputTokens: 100, outputTokens: 20 }, iterations: 1, model: 'openai/gpt-4o' });
    expect(JSON.stringify(server.requests[0]?.body['messages'])).toContain('what is the answer?');
    expect(await host.store.usage.list()).toMatchObject([{ model: 'openai/gpt-4o', inputTokens: 100, outputTokens: 20 }]);
  });

  it('answers an llm call with an error when the agent has no model', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('modelless', wasm.misbehave)));
    const result = JSON.parse((await host.kernel.send('modelless', 'llm hello')).text) as { ok: boolean; error: string };
    expect(result.ok).toBe(false);
    expect(result.error).toContain('has no [model]');
  });
});

describe('a wasm: module that misbehaves', () => {
  const faults: [string, string, RegExp, string][] = [
    ['trap', 'trap', /agent "wild"'s module trapped: unreachable/, ''],
    ['garbage', 'protocol', /answered with text that is not JSON .*"this is not json"/, ''],
    ['not-a-reply', 'protocol', /answered with JSON that is not a reply: expected \{"text": "..."\} or \{"error": "..."\}/, ''],
    ['error', 'error', /answered with an error: the module could not do it/, ''],
    ['huge', 'too-large', /reply is 2000011 bytes, over its limit of 100000 \(\[code\]\.max_reply_bytes\)/, 'max_reply_bytes = 100000'],
    ['outside', 'protocol', /reply lies outside its memory/, ''],
    ['grow', 'memory', /reached its 4 MB memory limit \(\[code\]\.memory_mb\) and stopped/, 'memory_mb = 4'],
  ];
  it.each(faults)('"%s" fails the message as %s, is audited, and the agent answers the next one', async (message, fault, pattern, limits) => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('wild', wasm.misbehave, `[code]\n${limits}`)));
    await expectFault(host.kernel.send('wild', message), fault, pattern);
    expect(await host.store.events.list({ type: 'code-module-fail' })).toMatchObject([{ data: { name: 'wild', fault } }]);
    // The message was accepted: it stays in the session, with a note that there was no reply.
    expect((await host.kernel.session('wild')).messages).toMatchObject([
      { role: 'user', content: message, providerOptions: { loom: { turn: { status: 'failed' } } } },
      { role: 'assistant', content: [{ type: 'text', text: expect.stringMatching(/^\[No reply: /) as string }] },
    ]);
    expect((await host.kernel.send('wild', 'still there?')).text).toBe('echo: still there?');
  });

  it('is stopped at its time limit while the daemon keeps answering health requests, and other wasm agents their messages', async () => {
    const logger = createRecordingLogger();
    const api = await startApi(dir.path, { logger });
    try {
      await api.host.kernel.spawn(manifest(wasmAgent('spinner', wasm.misbehave, '[code]\ntimeout_ms = 30000')));
      const spinning = api.host.kernel.send('spinner', 'spin');
      spinning.catch(() => undefined);
      // The module says so just before it spins on its thread.
      await waitFor('the module to spin', () => logger.entries.some((entry) => entry.message === 'spinning'));
      // A module spinning on the daemon's own thread would hold every request until its time
      // limit, which only the fake clock can reach: each answer here came while it spun. (How fast
      // they come is the machine's, not Loom's; outcomeWithin only names a hang.)
      for (let index = 0; index < 5; index += 1) {
        expect(
          await outcomeWithin(
            api.request('/api/health').then((response) => response.status),
            10_000,
          ),
        ).toEqual({ value: 200 });
      }
      // Another wasm agent (the same module, on another thread of the pool) answers meanwhile.
      await api.host.kernel.spawn(manifest(wasmAgent('calm', wasm.misbehave)));
      expect((await api.host.kernel.send('calm', 'meanwhile')).text).toBe('echo: meanwhile');
      await api.host.clock.advance(30_000);
      await expectFault(spinning, 'timeout', 'agent "spinner"\'s module ran past its time limit of 30 s ([code].timeout_ms) and was stopped');
      expect((await api.host.kernel.send('spinner', 'again')).text).toBe('echo: again');
    } finally {
      await api.close();
    }
  });

  it('is stopped when its agent is killed in the middle of a message', async () => {
    const logger = createRecordingLogger();
    host = await openTestHost(dir.path, {}, TEST_KEYS, { logger });
    await host.kernel.spawn(manifest(wasmAgent('doomed', wasm.misbehave)));
    const spinning = host.kernel.send('doomed', 'spin');
    spinning.catch(() => undefined);
    await waitFor('the module to spin', () => logger.entries.some((entry) => entry.message === 'spinning'));
    await host.kernel.kill('doomed');
    await expect(spinning).rejects.toThrow(AgentStateError);
  });
});

describe('the doors, unchanged for a code agent', () => {
  it('HTTP with JSON and SSE, the OpenAI-compatible endpoint, and a fault as a 502 naming it', async () => {
    const api = await startApi(dir.path);
    try {
      await api.host.kernel.spawn(manifest(wasmAgent('door', wasm.misbehave, '[capabilities]\ntools = ["agent_list"]')));
      const post = (body: unknown, accept = 'application/json'): RequestInit => ({
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify(body),
      });
      const plain = await api.request('/api/agents/door/messages', post({ message: 'hi' }));
      expect(plain.status).toBe(200);
      expect(await plain.json()).toEqual({
        text: 'echo: hi',
        usage: { input_tokens: 0, output_tokens: 0 },
        iterations: 0,
        cost_usd: 0,
        model: `wasm:${wasm.misbehave}`,
      });

      const streamed = await api.request(
        '/api/agents/door/messages',
        post({ message: 'tool {"call":"tool","name":"agent_list","input":{}}' }, 'text/event-stream'),
      );
      const events: SseEvent[] = [];
      for await (const event of readSse(streamed)) if (event.comment === undefined) events.push(event);
      expect(events.map((event) => event.event)).toEqual(['run-start', 'tool-call', 'tool-result', 'run-finish']);
      expect(JSON.parse(events[2]?.data ?? '{}')).toMatchObject({ toolName: 'agent_list', isError: false, text: 'door (running)' });

      const completion = await api.request('/v1/chat/completions', post({ model: 'door', messages: [{ role: 'user', content: 'via openai' }] }));
      expect(completion.status).toBe(200);
      expect(((await completion.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('echo: via openai');

      const failed = await api.request('/api/agents/door/messages', post({ message: 'trap' }));
      expect(failed.status).toBe(502);
      expect(await failed.json()).toMatchObject({ error: { code: 'CODE_MODULE_FAILED', details: { fault: 'trap' } } });
    } finally {
      await api.close();
    }
  });
});

describe('a WASI command module', () => {
  it('reads the request on stdin and answers on stdout, seeing only the environment env_read grants', async () => {
    host = await openTestHost(dir.path, {}, { ...TEST_KEYS, LOOM_GREETING: 'hi', OTHER_SECRET: 'no' });
    await host.kernel.spawn(manifest(wasmAgent('plain', wasm.wasi)));
    expect((await host.kernel.send('plain', 'hello')).text).toBe('wasi: hello (0 env)');
    await host.kernel.spawn(manifest(wasmAgent('greeted', wasm.wasi, '[capabilities]\nenv_read = ["LOOM_GREETING"]')));
    expect((await host.kernel.send('greeted', 'hello')).text).toBe('wasi: hello (1 env)');
  });

  it('fails the message when the module exits with an error, quoting its stderr', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('failing', wasm.wasi)));
    await expectFault(host.kernel.send('failing', 'fail'), 'exited', /exited with code 3: something broke/);
    expect((await host.kernel.send('failing', 'ok')).text).toBe('wasi: ok (0 env)');
  });
});

describe("a WASI command module and the daemon's descriptors", () => {
  const LOG_CALL = '{"call":"log","message":"descriptors freed"}';
  const CLOSED = '{"text":"closed"}';
  const REFUSED = '{"text":"refused"}';
  // Closes stdin and renumbers stderr over stdout (freeing two numbers of the daemon's table),
  // makes a host call while the daemon opens files of its own, and says whether the calls worked.
  const CLOSER = `(module
    (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_renumber" (func $fd_renumber (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
    (import "loom" "host_call" (func $host_call (param i32 i32) (result i64)))
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 4096))
    (data (i32.const 0) ${watString(LOG_CALL)})
    (data (i32.const 100) ${watString(CLOSED)})
    (data (i32.const 200) ${watString(REFUSED)})
    ${BUMP_ALLOC}
    (func (export "_start")
      (local $failed i32)
      (local.set $failed (i32.or (call $fd_close (i32.const 0)) (call $fd_renumber (i32.const 2) (i32.const 1))))
      (drop (call $host_call (i32.const 0) (i32.const ${LOG_CALL.length})))
      (if (local.get $failed)
        (then (i32.store (i32.const 300) (i32.const 200)) (i32.store (i32.const 304) (i32.const ${REFUSED.length})))
        (else (i32.store (i32.const 300) (i32.const 100)) (i32.store (i32.const 304) (i32.const ${CLOSED.length}))))
      (drop (call $fd_write (i32.const 1) (i32.const 300) (i32.const 1) (i32.const 308)))))`;

  it('cannot close or renumber its stdio, so Loom never closes a file the daemon opened in the meantime', async () => {
    const path = await writeWat('closer', CLOSER);
    const daemonFile = join(dir.path, 'daemon-file.txt');
    await writeFile(daemonFile, "the daemon's own file");
    // While the module waits on its host call, the daemon opens files: the lowest free numbers,
    // which are the ones the module freed if it could free any.
    const opened: number[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: (_bindings, message) => {
        if (message === 'descriptors freed') for (let index = 0; index < 32; index += 1) opened.push(openSync(daemonFile, 'r'));
      },
      warn: () => undefined,
      error: () => undefined,
      child: () => logger,
    };
    host = await openTestHost(dir.path, {}, TEST_KEYS, { logger });
    await host.kernel.spawn(manifest(wasmAgent('closer', path)));
    const reply = await host.kernel.send('closer', 'go');
    expect(opened).toHaveLength(32);
    const lost = opened.filter((fd) => {
      try {
        fstatSync(fd);
        return readlinkSync(`/proc/self/fd/${fd}`) !== daemonFile;
      } catch {
        return true;
      }
    });
    for (const fd of opened) if (!lost.includes(fd)) closeSync(fd);
    expect(lost).toEqual([]);
    expect(reply.text).toBe('refused');
  });
});

describe('a WASI command module that sleeps', () => {
  const LOG_CALL = '{"call":"log","message":"asleep"}';
  // Reads the request; logs "asleep" (a host call) and asks poll_oneoff for a sleep on the
  // monotonic clock: some 31 years when the message starts with "s", else 10 ms; then answers
  // "woke" when the sleep's event came back as asked, "oops" when not.
  const SLEEPER = `(module
    (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
    (import "loom" "host_call" (func $host_call (param i32 i32) (result i64)))
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 8192))
    (data (i32.const 1024) ${watString(LOG_CALL)})
    (data (i32.const 1100) ${watString('{"text":"woke"}')})
    (data (i32.const 1200) ${watString('{"text":"oops"}')})
    ${BUMP_ALLOC}
    (func (export "_start")
      (local $woke i32)
      (i32.store (i32.const 0) (i32.const 4096))
      (i32.store (i32.const 4) (i32.const 64))
      (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
      (drop (call $host_call (i32.const 1024) (i32.const ${LOG_CALL.length})))
      (i64.store (i32.const 256) (i64.const 7))
      (i32.store8 (i32.const 264) (i32.const 0))
      (i32.store (i32.const 272) (i32.const 1))
      ;; The message starts at byte 43 of the request: {"protocol":"loom.code-agent/1","message":"…
      (i64.store (i32.const 280)
        (select (i64.const 1000000000000000000) (i64.const 10000000) (i32.eq (i32.load8_u (i32.const 4139)) (i32.const 115))))
      (i64.store (i32.const 288) (i64.const 0))
      (i32.store16 (i32.const 296) (i32.const 0))
      (local.set $woke
        (i32.and
          (i32.eqz (call $poll_oneoff (i32.const 256) (i32.const 512) (i32.const 1) (i32.const 16)))
          (i32.and (i32.eq (i32.load (i32.const 16)) (i32.const 1)) (i64.eq (i64.load (i32.const 512)) (i64.const 7)))))
      (i32.store (i32.const 32) (select (i32.const 1100) (i32.const 1200) (local.get $woke)))
      (i32.store (i32.const 36) (i32.const 15))
      (drop (call $fd_write (i32.const 1) (i32.const 32) (i32.const 1) (i32.const 40)))))`;

  it('is stopped at its time limit while asleep, its agent answers its next message, and a kill in a sleep ends the message', async () => {
    const path = await writeWat('sleeper', SLEEPER);
    const logger = createRecordingLogger();
    host = await openTestHost(dir.path, {}, TEST_KEYS, { logger });
    await host.kernel.spawn(manifest(wasmAgent('sleeper', path, '[code]\ntimeout_ms = 1000')));
    const asleep = (count: number): Promise<true> =>
      waitFor(`the module to fall asleep (${count})`, () => logger.entries.filter((entry) => entry.message === 'asleep').length >= count);
    // A short sleep is a sleep, and its event comes back as WASI says.
    expect((await host.kernel.send('sleeper', 'nap')).text).toBe('woke');

    const sleeping = outcomeWithin(host.kernel.send('sleeper', 'sleep'), 5000);
    await asleep(2);
    await host.clock.advance(1000);
    expect(await sleeping).toMatchObject({
      error: { fault: 'timeout', message: 'agent "sleeper"\'s module ran past its time limit of 1 s ([code].timeout_ms) and was stopped' },
    });
    expect(await outcomeWithin(host.kernel.send('sleeper', 'nap again'), 5000)).toEqual({ value: expect.objectContaining({ text: 'woke' }) as unknown });

    const killed = outcomeWithin(host.kernel.send('sleeper', 'sleep'), 5000);
    await asleep(4);
    expect(await outcomeWithin(host.kernel.kill('sleeper'), 5000)).toHaveProperty('value');
    expect(await killed).toEqual({ error: expect.any(AgentStateError) as unknown });
  });
});

describe('spawning a wasm: agent', () => {
  it('is refused with a message naming what is wrong: no file, not a module, no ABI, a relative path without a folder', async () => {
    host = await openTestHost(dir.path);
    const missing = join(dir.path, 'nowhere.wasm');
    await expect(host.kernel.spawn(manifest(wasmAgent('a', missing)))).rejects.toThrow(
      `module "wasm:${missing}" names no file: there is nothing at that path (a module built from source is there only once built: see the build command in its manifest or docs/code-agents.md)`,
    );
    const text = join(dir.path, 'text.wasm');
    await writeFile(text, 'not a module');
    await expect(host.kernel.spawn(manifest(wasmAgent('b', text)))).rejects.toThrow(/it is not a WebAssembly module: .*magic/);
    const asc = await import('assemblyscript/asc');
    const bare = await asc.default.compileString('export function nothing(): void {}', { runtime: 'stub' });
    const empty = join(dir.path, 'empty.wasm');
    await writeFile(empty, bare.binary ?? new Uint8Array());
    await expect(host.kernel.spawn(manifest(wasmAgent('c', empty)))).rejects.toThrow(
      'it follows neither ABI: a WASI command exports _start, and a core module exports memory, loom_alloc and loom_handle; it lacks loom_alloc (function), loom_handle (function)',
    );
    await expect(host.kernel.spawn(manifest(wasmAgent('d', 'echo.wasm')))).rejects.toThrow(/is a relative path, and a manifest sent as text has no folder/);
    expect(host.kernel.list()).toEqual([]);
  });

  it('refuses a module with several memories, which together would grow past [code].memory_mb', async () => {
    // Four memories, each under the cap: a module that grows them all held 32 MiB under memory_mb = 8.
    const path = await writeWat(
      'memories',
      `(module
        (memory (export "memory") 1)
        (memory $second 1)
        (memory $third 1)
        (memory $fourth 1)
        (func (export "loom_alloc") (param i32) (result i32) (i32.const 1024))
        (func (export "loom_handle") (param i32 i32) (result i64)
          (drop (memory.grow $second (i32.const 127)))
          (drop (memory.grow $third (i32.const 127)))
          (drop (memory.grow $fourth (i32.const 127)))
          (i64.const 0)))`,
    );
    host = await openTestHost(dir.path);
    await expect(host.kernel.spawn(manifest(wasmAgent('hoarder', path, '[code]\nmemory_mb = 8')))).rejects.toThrow(
      `cannot run agent "hoarder": module "wasm:${path}" the module defines 4 memories; a code agent's module may have one, which [code].memory_mb caps`,
    );
    expect(host.kernel.list()).toEqual([]);
  });

  it('refuses a module that declares GC types, whose objects [code].memory_mb does not hold', async () => {
    // Allocates 1 MiB arrays in a loop, kept in a list: outside its memory, and beyond terminate() in V8.
    const path = await writeWat(
      'collector',
      `(module
        (type $bytes (array (mut i8)))
        (type $node (struct (field $next (ref null $node)) (field $data (ref $bytes))))
        (memory (export "memory") 1)
        (global $head (mut (ref null $node)) (ref.null $node))
        (func (export "loom_alloc") (param i32) (result i32) (i32.const 1024))
        (func (export "loom_handle") (param i32 i32) (result i64)
          (loop $more
            (global.set $head (struct.new $node (global.get $head) (array.new_default $bytes (i32.const 1048576))))
            (br $more))
          (i64.const 0)))`,
    );
    host = await openTestHost(dir.path);
    const refusal = await caught(host.kernel.spawn(manifest(wasmAgent('collector', path, '[code]\nmemory_mb = 8'))));
    expect(refusal).toBeInstanceOf(ManifestError);
    // Which type comes first is the assembler's choice.
    expect((refusal as Error).message).toMatch(
      /^cannot run agent "collector": module "wasm:.*" the module declares WebAssembly GC types \(type \d+ is (an array|a struct)\); their objects live outside its memory, where \[code\]\.memory_mb cannot cap them, so code agents run modules without them$/,
    );
    expect(host.kernel.list()).toEqual([]);
  });

  it("keeps a child running its parent's module within the parent's [code] limits", async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('parent', wasm.echo, '[capabilities]\nagent_spawn = true\n[code]\ntimeout_ms = 1000\nmemory_mb = 8')));
    await expect(host.kernel.spawn(manifest(wasmAgent('greedy', wasm.echo, '[code]\ntimeout_ms = 5000')), { parent: 'parent' })).rejects.toThrow(
      CapabilityEscalationError,
    );
    await expect(host.kernel.spawn(manifest(wasmAgent('greedy', wasm.echo, '[code]\ntimeout_ms = 5000')), { parent: 'parent' })).rejects.toThrow(
      "[code].timeout_ms 5000 is more than the parent's 1000",
    );
    const child = await host.kernel.spawn(manifest(wasmAgent('modest', wasm.echo)), { parent: 'parent' });
    expect(host.kernel.get(child.id).manifest.code).toMatchObject({ timeout_ms: 1000, memory_mb: 8 });
    await expect(host.kernel.spawn(manifest(wasmAgent('other', wasm.wasi)), { parent: 'parent' })).rejects.toThrow(/is code the parent does not run/);
  });
});
