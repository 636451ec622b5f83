import { createHash, createHmac, randomUUID } from 'node:crypto';
import ivm from 'isolated-vm';
import type { JsonValue } from '../contracts/index.ts';

/** The hard limits of one sandboxed program. */
export interface SandboxLimits {
  /** Wall clock per call, covering sync and async code, hung promises and bridge calls. */
  timeoutMs: number;
  /** The isolate's heap. */
  memoryMb: number;
  /** The largest output, in bytes of JSON. */
  maxOutputBytes: number;
}

/**
 * Host functions the isolate may reach, present only when both the tool's allowlist and its
 * agent allow them. The caller implements them (through Loom's tool runner, as the agent); the
 * sandbox only carries strings across.
 */
export interface SandboxBridges {
  fetch?: (request: { url: string; method: string; headers: Record<string, string>; body?: string }) => Promise<{ url: string; status: number; statusText: string; headers: Record<string, string>; body: string }>;
  readFile?: (path: string) => Promise<string>;
  /** Hashing on the host: `crypto.createHash(alg)`, `crypto.createHmac(alg, key)`, `crypto.randomUUID()`. */
  crypto?: true;
}

/** Why a call failed: a limit it hit, what it threw, its output, a cancellation, or too many bridge calls. */
export interface SandboxFailure {
  kind: 'timeout' | 'memory' | 'thrown' | 'output' | 'aborted' | 'bridge';
  message: string;
}

/** One call's outcome. */
export type SandboxOutcome = { ok: true; output: JsonValue; durationMs: number } | { ok: false; error: SandboxFailure; durationMs: number };

/** A tool's code, compiled once on a warm isolate; each call runs in a fresh context. */
export interface SandboxedProgram {
  run(input: JsonValue, options: { bridges: SandboxBridges; signal?: AbortSignal }): Promise<SandboxOutcome>;
  /** Releases the isolate; a later `run` fails. */
  dispose(): void;
  readonly disposed: boolean;
}

/** Bridge calls (fetch, readFile, hashes) one call may make. */
export const MAX_BRIDGE_CALLS = 20;

/** Longest error message carried out of the isolate. */
const MAX_ERROR_LENGTH = 2000;

/**
 * A released context is not collected until its isolate is (V8 keeps ~160 KB of each), so an
 * isolate is rebuilt once its heap passes this share of the limit.
 */
const RECYCLE_HEAP_SHARE = 0.4;

/** Slack given to the isolate's own timeout before the host gives up on it. */
const HOST_GRACE_MS = 50;

const TOO_LARGE = '__LOOM_OUTPUT_TOO_LARGE__:';

/**
 * Runs before the tool's code in every context: turns the raw bridge references into `fetch`,
 * `fs` and `crypto`, and removes them from the global object, so the code sees only those.
 */
const PRELUDE = `(() => {
  'use strict';
  const g = globalThis;
  const fetchRef = g.__loom_fetch, readRef = g.__loom_read, cryptoRef = g.__loom_crypto;
  delete g.__loom_fetch; delete g.__loom_read; delete g.__loom_crypto;
  const call = async (ref, payload) => {
    const reply = JSON.parse(await ref.apply(undefined, [JSON.stringify(payload)], { arguments: { copy: true }, result: { promise: true, copy: true } }));
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply.value;
  };
  if (fetchRef !== undefined) {
    g.fetch = async (url, init) => {
      const options = init ?? {};
      const headers = {};
      for (const [key, value] of Object.entries(options.headers ?? {})) headers[String(key)] = String(value);
      const request = { url: String(url), method: String(options.method ?? 'GET').toUpperCase(), headers };
      if (options.body !== undefined) request.body = String(options.body);
      const response = await call(fetchRef, request);
      const lower = {};
      for (const [key, value] of Object.entries(response.headers)) lower[key.toLowerCase()] = value;
      return {
        status: response.status,
        ok: response.status >= 200 && response.status < 300,
        statusText: response.statusText,
        redirected: response.url !== request.url,
        url: response.url,
        headers: { get: (name) => lower[String(name).toLowerCase()] ?? null },
        text: async () => response.body,
        json: async () => JSON.parse(response.body),
      };
    };
  }
  if (readRef !== undefined) {
    const readFile = async (path) => call(readRef, { path: String(path) });
    g.fs = { readFile, promises: { readFile } };
  }
  if (cryptoRef !== undefined) {
    const sync = (payload) => {
      const reply = JSON.parse(cryptoRef(JSON.stringify(payload)));
      if (reply.error !== undefined) throw new Error(reply.error);
      return reply.value;
    };
    const digester = (kind, algorithm, key) => {
      let data = '';
      const hash = {
        update(chunk) { data += String(chunk); return hash; },
        digest(encoding) { return sync({ kind, algorithm, key, data, encoding: encoding ?? 'hex' }); },
      };
      return hash;
    };
    g.crypto = {
      createHash: (algorithm) => digester('hash', String(algorithm)),
      createHmac: (algorithm, key) => digester('hmac', String(algorithm), String(key)),
      randomUUID: () => sync({ kind: 'uuid' }),
    };
  }
})();`;

/** Appended to the tool's code: the entry the host calls, with JSON in and JSON out. */
function entryOf(maxOutputBytes: number): string {
  return `\n;globalThis.__loom_run = async (json) => {
  if (typeof execute !== 'function') throw new Error('the tool defines no execute(input) function');
  const output = await execute(JSON.parse(json));
  const text = JSON.stringify(output);
  if (text === undefined) throw new Error('execute(input) returned ' + (output === undefined ? 'undefined' : 'a ' + typeof output) + ', not a JSON value');
  if (text.length > ${maxOutputBytes}) throw new Error('${TOO_LARGE}' + text.length);
  return text;
};`;
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
}

const ENCODINGS = new Set(['hex', 'base64', 'base64url']);

/** The host side of `crypto`: strings in, a JSON reply out; never throws. */
function cryptoBridge(payloadText: string): string {
  try {
    const payload = JSON.parse(payloadText) as { kind: string; algorithm?: string; key?: string; data?: string; encoding?: string };
    if (payload.kind === 'uuid') return JSON.stringify({ value: randomUUID() });
    const encoding = payload.encoding ?? 'hex';
    if (!ENCODINGS.has(encoding)) return JSON.stringify({ error: `digest("${encoding}"): expected "hex", "base64" or "base64url"` });
    const algorithm = payload.algorithm ?? '';
    const hash = payload.kind === 'hmac' ? createHmac(algorithm, payload.key ?? '') : createHash(algorithm);
    return JSON.stringify({ value: hash.update(payload.data ?? '').digest(encoding as 'hex') });
  } catch (error) {
    return JSON.stringify({ error: messageOf(error) });
  }
}

/**
 * Compiles a sandboxed tool's code for an isolate of its own (`isolated-vm`: a separate V8 heap
 * and realm, never the daemon's). Every call gets a fresh context, the input as a JSON string,
 * and gives back a JSON string checked against the size cap before it is parsed. A call that
 * passes its time limit, or an isolate that passes its memory limit, is stopped (the isolate is
 * rebuilt for the next call).
 * @throws {Error} when the code does not compile (the code check reports that first).
 */
export async function compileSandboxProgram(code: string, limits: SandboxLimits): Promise<SandboxedProgram> {
  let disposed = false;
  let isolate: ivm.Isolate | undefined;
  let prelude: ivm.Script | undefined;
  let program: ivm.Script | undefined;

  async function ready(): Promise<{ isolate: ivm.Isolate; prelude: ivm.Script; program: ivm.Script }> {
    if (isolate === undefined || isolate.isDisposed || prelude === undefined || program === undefined) {
      isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
      prelude = await isolate.compileScript(PRELUDE, { filename: 'loom-prelude.js' });
      program = await isolate.compileScript(code + entryOf(limits.maxOutputBytes), { filename: 'tool.js' });
    }
    return { isolate, prelude, program };
  }
  // Compile now, so broken code fails at forge time rather than at the first call.
  await ready();

  function kill(): void {
    if (isolate !== undefined && !isolate.isDisposed) isolate.dispose();
  }

  async function run(input: JsonValue, options: { bridges: SandboxBridges; signal?: AbortSignal }): Promise<SandboxOutcome> {
    const started = performance.now();
    const elapsed = (): number => performance.now() - started;
    const fail = (kind: SandboxFailure['kind'], message: string): SandboxOutcome => ({ ok: false, error: { kind, message }, durationMs: elapsed() });
    if (disposed) return fail('aborted', 'the tool was retired');
    if (options.signal?.aborted === true) return fail('aborted', 'the call was cancelled');
    let current: ivm.Isolate;
    let setup: ivm.Script;
    let code: ivm.Script;
    let context: ivm.Context;
    try {
      ({ isolate: current, prelude: setup, program: code } = await ready());
      context = await current.createContext();
    } catch (error) {
      kill();
      return fail('thrown', `the sandbox could not start: ${messageOf(error)}`);
    }
    let bridgeCalls = 0;
    let bridgeExceeded = false;
    const counted = (): boolean => {
      bridgeCalls += 1;
      if (bridgeCalls > MAX_BRIDGE_CALLS) bridgeExceeded = true;
      return !bridgeExceeded;
    };
    const tooMany = JSON.stringify({ error: `more than ${MAX_BRIDGE_CALLS} bridge calls in one call` });
    const asyncBridge = (work: (payload: never) => Promise<unknown>) =>
      new ivm.Reference(async (payloadText: string): Promise<string> => {
        if (!counted()) return tooMany;
        try {
          return JSON.stringify({ value: await work(JSON.parse(payloadText) as never) });
        } catch (error) {
          return JSON.stringify({ error: messageOf(error) });
        }
      });
    const { bridges } = options;
    const timers: { timer?: NodeJS.Timeout } = {};
    let onAbort: (() => void) | undefined;
    try {
      const jail = context.global;
      if (bridges.fetch !== undefined) {
        const fetcher = bridges.fetch;
        await jail.set('__loom_fetch', asyncBridge((request: Parameters<typeof fetcher>[0]) => fetcher(request)));
      }
      if (bridges.readFile !== undefined) {
        const reader = bridges.readFile;
        await jail.set('__loom_read', asyncBridge((request: { path: string }) => reader(request.path)));
      }
      if (bridges.crypto === true) await jail.set('__loom_crypto', new ivm.Callback((payload: string) => (counted() ? cryptoBridge(payload) : tooMany)));
      const budget = (): number => Math.max(1, Math.ceil(limits.timeoutMs - elapsed()));
      const work = (async (): Promise<string> => {
        await setup.run(context, { timeout: budget() });
        await code.run(context, { timeout: budget() });
        const entry = (await jail.get('__loom_run', { reference: true })) as ivm.Reference<(json: string) => Promise<string>>;
        return entry.apply(undefined, [JSON.stringify(input)], { arguments: { copy: true }, result: { promise: true, copy: true }, timeout: budget() });
      })();
      // The host's own clock: a promise that never settles runs no code for V8's timeout to stop.
      const stopped = new Promise<'timeout' | 'aborted'>((resolve) => {
        timers.timer = setTimeout(() => resolve('timeout'), limits.timeoutMs + HOST_GRACE_MS);
        onAbort = () => resolve('aborted');
        if (options.signal?.aborted === true) resolve('aborted');
        else options.signal?.addEventListener('abort', onAbort, { once: true });
      });
      const settled = await Promise.race([work.then((text) => ({ text }), (error: unknown) => ({ error })), stopped]);
      if (settled === 'timeout' || settled === 'aborted') {
        work.catch(() => undefined);
        kill();
        return settled === 'timeout' ? fail('timeout', `the tool ran past its ${limits.timeoutMs} ms time limit and was stopped`) : fail('aborted', 'the call was cancelled');
      }
      if (bridgeExceeded) return fail('bridge', `the tool made more than ${MAX_BRIDGE_CALLS} bridge calls (fetch, fs.readFile, crypto) in one call`);
      if ('error' in settled) {
        const message = messageOf(settled.error);
        if (current.isDisposed || /memory limit/i.test(message)) {
          kill();
          return fail('memory', `the tool went over its ${limits.memoryMb} MB memory limit and was stopped`);
        }
        if (/timed out/i.test(message)) return fail('timeout', `the tool ran past its ${limits.timeoutMs} ms time limit and was stopped`);
        const large = message.indexOf(TOO_LARGE);
        if (large !== -1) return fail('output', `the tool's output is ${Number(message.slice(large + TOO_LARGE.length)).toLocaleString('en-US')} characters of JSON, over the ${limits.maxOutputBytes.toLocaleString('en-US')}-byte cap`);
        return fail('thrown', message);
      }
      const bytes = Buffer.byteLength(settled.text, 'utf8');
      if (bytes > limits.maxOutputBytes) return fail('output', `the tool's output is ${bytes.toLocaleString('en-US')} bytes, over the ${limits.maxOutputBytes.toLocaleString('en-US')}-byte cap`);
      try {
        return { ok: true, output: JSON.parse(settled.text) as JsonValue, durationMs: elapsed() };
      } catch (error) {
        return fail('output', `the tool's output is not JSON: ${messageOf(error)}`);
      }
    } catch (error) {
      // Setting up the context failed (the isolate was disposed under it): the call fails, the program lives on.
      kill();
      return fail(current.isDisposed ? 'memory' : 'thrown', `the sandbox failed: ${messageOf(error)}`);
    } finally {
      clearTimeout(timers.timer);
      if (onAbort !== undefined) options.signal?.removeEventListener('abort', onAbort);
      if (!current.isDisposed) {
        context.release();
        if (current.getHeapStatisticsSync().used_heap_size > limits.memoryMb * 1024 * 1024 * RECYCLE_HEAP_SHARE) kill();
      }
    }
  }

  return {
    run,
    dispose() {
      disposed = true;
      kill();
    },
    get disposed() {
      return disposed;
    },
  };
}
