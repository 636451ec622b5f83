import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentStateError, CapabilityEscalationError, CodeModuleError } from '../../src/errors/index.ts';
import { loadManifestFile } from '../../src/manifest/index.ts';
import { buildWasm } from '../support/build-wasm.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../helpers/test-kernel.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../helpers/test-host.ts';
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

async function expectFault(promise: Promise<unknown>, fault: string, message: RegExp | string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CodeModuleError);
  expect((error as CodeModuleError).fault).toBe(fault);
  expect((error as Error).message).toMatch(message);
}

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
    const refused = JSON.parse((await host.kernel.send('reader', `tool {"call":"tool","name":"file_read","input":{"path":"${secret}"}}`)).text) as { ok: boolean; error: string };
    expect(refused.ok).toBe(false);
    expect(refused.error).toContain(`is not granted [capabilities].file_read "${secret}"`);
    const notHeld = JSON.parse((await host.kernel.send('reader', 'tool {"call":"tool","name":"shell_exec","input":{"command":"id"}}')).text) as { ok: boolean; error: string };
    expect(notHeld).toMatchObject({ ok: false });
    expect(notHeld.error).toContain('shell_exec');
    expect(await host.store.events.list({ type: 'tool-denied' })).toHaveLength(2);

    const workspace = join(dir.path, 'home', 'workspaces', 'reader');
    await writeFile(join(workspace, 'notes.txt'), 'kept in the workspace');
    const read = JSON.parse((await host.kernel.send('reader', 'tool {"call":"tool","name":"file_read","input":{"path":"notes.txt"}}')).text) as { ok: boolean; text: string };
    expect(read).toEqual({ ok: true, text: 'kept in the workspace' });
    const bad = JSON.parse((await host.kernel.send('reader', 'tool {"call":"teleport"}')).text) as { ok: boolean; error: string };
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(/host call is not one of tool, llm, log/);
  });

  it('makes model calls on the agent\'s model through llm, recorded as its usage', async () => {
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
    expect(await host.store.events.list({ type: 'code-module-fault' })).toMatchObject([{ data: { name: 'wild', fault } }]);
    // The message was accepted: it stays in the session, with a note that there was no reply.
    expect((await host.kernel.session('wild')).messages).toMatchObject([
      { role: 'user', content: message, providerOptions: { loom: { turn: { status: 'failed' } } } },
      { role: 'assistant', content: [{ type: 'text', text: expect.stringMatching(/^\[No reply: /) as string }] },
    ]);
    expect((await host.kernel.send('wild', 'still there?')).text).toBe('echo: still there?');
  });

  it('is stopped at its time limit while the daemon keeps answering health requests within 100 ms, and other wasm agents their messages', async () => {
    const api = await startApi(dir.path);
    try {
      await api.host.kernel.spawn(manifest(wasmAgent('spinner', wasm.misbehave, '[code]\ntimeout_ms = 30000')));
      const spinning = api.host.kernel.send('spinner', 'spin');
      spinning.catch(() => undefined);
      // The module is spinning on its thread by now.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const durations: number[] = [];
      for (let index = 0; index < 5; index += 1) {
        const started = performance.now();
        const response = await api.request('/api/health');
        durations.push(performance.now() - started);
        expect(response.status).toBe(200);
      }
      expect(Math.max(...durations)).toBeLessThan(100);
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
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('doomed', wasm.misbehave)));
    const spinning = host.kernel.send('doomed', 'spin');
    spinning.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await host.kernel.kill('doomed');
    await expect(spinning).rejects.toThrow(AgentStateError);
  });
});

describe('the doors, unchanged for a code agent', () => {
  it('HTTP with JSON and SSE, the OpenAI-compatible endpoint, and a fault as a 502 naming it', async () => {
    const api = await startApi(dir.path);
    try {
      await api.host.kernel.spawn(manifest(wasmAgent('door', wasm.misbehave, '[capabilities]\ntools = ["agent_list"]')));
      const post = (body: unknown, accept = 'application/json'): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify(body) });
      const plain = await api.request('/api/agents/door/messages', post({ message: 'hi' }));
      expect(plain.status).toBe(200);
      expect(await plain.json()).toEqual({ text: 'echo: hi', usage: { input_tokens: 0, output_tokens: 0 }, iterations: 0, cost_usd: 0, model: `wasm:${wasm.misbehave}` });

      const streamed = await api.request('/api/agents/door/messages', post({ message: 'tool {"call":"tool","name":"agent_list","input":{}}' }, 'text/event-stream'));
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

describe('spawning a wasm: agent', () => {
  it('is refused with a message naming what is wrong: no file, not a module, no ABI, a relative path without a folder', async () => {
    host = await openTestHost(dir.path);
    const missing = join(dir.path, 'nowhere.wasm');
    await expect(host.kernel.spawn(manifest(wasmAgent('a', missing)))).rejects.toThrow(`module "wasm:${missing}" names no file: there is nothing at that path (a module built from source is there only once built: see the build command in its manifest or docs/code-agents.md)`);
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

  it('keeps a child running its parent\'s module within the parent\'s [code] limits', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(wasmAgent('parent', wasm.echo, '[capabilities]\nagent_spawn = true\n[code]\ntimeout_ms = 1000\nmemory_mb = 8')));
    await expect(host.kernel.spawn(manifest(wasmAgent('greedy', wasm.echo, '[code]\ntimeout_ms = 5000')), { parent: 'parent' })).rejects.toThrow(CapabilityEscalationError);
    await expect(host.kernel.spawn(manifest(wasmAgent('greedy', wasm.echo, '[code]\ntimeout_ms = 5000')), { parent: 'parent' })).rejects.toThrow('[code].timeout_ms 5000 is more than the parent\'s 1000');
    const child = await host.kernel.spawn(manifest(wasmAgent('modest', wasm.echo)), { parent: 'parent' });
    expect(host.kernel.get(child.id).manifest.code).toMatchObject({ timeout_ms: 1000, memory_mb: 8 });
    await expect(host.kernel.spawn(manifest(wasmAgent('other', wasm.wasi)), { parent: 'parent' })).rejects.toThrow(/is code the parent does not run/);
  });
});
