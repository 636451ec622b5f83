/**
 * The inside of the sandbox process (`sandbox-process.ts`): a forged tool's code compiled for an
 * isolate of its own. It imports nothing of Loom's but types and the JSON depth measure, so the
 * process loads only this, isolated-vm and Node's crypto. The daemon talks to it through `sandbox.ts`.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import type ivm from 'isolated-vm';
import type { JsonValue } from '../contracts/index.ts';
// Imported by its file, not through validation/index.ts, which would load Ajv and zod into every
// sandbox process: json-depth.ts imports nothing.
import { waitForTurn } from './wait-for-turn.ts';
import { jsonTextDepth, MAX_JSON_DEPTH, tooDeepMessage } from '../validation/json-depth.ts';

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
 * The bridges as the isolate's process sees them: the request as the isolate wrote it (JSON text,
 * not yet checked) in, the reply (`{"value": …}` or `{"error": "…"}`) out. The daemon checks and
 * carries out each request (`sandbox.ts`).
 */
export interface IsolateBridges {
  fetch?: (payloadText: string) => Promise<string>;
  readFile?: (payloadText: string) => Promise<string>;
  /** Hashing in the sandbox process: `crypto.createHash(alg)`, `crypto.createHmac(alg, key)`, `crypto.randomUUID()`. */
  crypto?: true;
}

/** Why a call failed: a limit it hit, what it threw, its output, a cancellation, or too many bridge calls. */
export interface SandboxFailure {
  kind: 'timeout' | 'memory' | 'thrown' | 'output' | 'aborted' | 'bridge';
  message: string;
}

/** One call's outcome, as the daemon reads it. */
export type SandboxOutcome = { ok: true; output: JsonValue; durationMs: number } | { ok: false; error: SandboxFailure; durationMs: number };

/**
 * One call's outcome as the sandbox process passes it on: the output as JSON text, within the
 * size cap and {@link MAX_JSON_DEPTH}, never parsed here (the daemon parses it, after checking it
 * again), so no value of the tool's is walked by anything recursive in this process.
 */
export type IsolateOutcome = { ok: true; outputJson: string; durationMs: number } | { ok: false; error: SandboxFailure; durationMs: number };

/** A tool's code, compiled once on a warm isolate; each call runs in a fresh context. */
export interface IsolateProgram {
  run(inputJson: string, options: { bridges: IsolateBridges; signal?: AbortSignal }): Promise<IsolateOutcome>;
  /** Releases the isolate; a later `run` fails. */
  dispose(): void;
}

/** Bridge calls to the agent's tools (fetch, fs.readFile) one call may make. */
export const MAX_BRIDGE_CALLS = 20;

/** Host crypto calls (digests, UUIDs) one call may make; cheap, so capped apart from fetch and reads. */
export const MAX_CRYPTO_CALLS = 1_000;

/** Longest error message carried out of the isolate. */
const MAX_ERROR_LENGTH = 2000;

/**
 * A released context is not collected until its isolate is (V8 keeps ~160 KB of each), so an
 * isolate is rebuilt once its heap passes this share of the limit.
 */
const RECYCLE_HEAP_SHARE = 0.4;

/** Slack given to the isolate's own timeout before the host gives up on it. */
const HOST_GRACE_MS = 50;

/**
 * Runs before the tool's code in every context: turns the raw bridge references into `fetch`,
 * `fs` and `crypto`, and removes them from the global object, so the code sees only those. Its
 * value is the entry the host calls (never on the global object, so the tool's code cannot
 * replace it): JSON in, and out a tagged string — `o` + the output's JSON, `t` + what the tool
 * threw, `u` + why the output is not JSON, `l` + the length of an output over the cap. A tool's
 * own error is always data here, so it can never pass for a limit the host enforces.
 */
function preludeOf(maxOutputBytes: number): string {
  return `(() => {
  'use strict';
  const g = globalThis;
  const fetchRef = g.__loom_fetch, readRef = g.__loom_read, cryptoRef = g.__loom_crypto;
  delete g.__loom_fetch; delete g.__loom_read; delete g.__loom_crypto;
  // A WebAssembly memory lives outside the isolate's heap, so its memory limit does not count it
  // (an outside probe held 1.7 GB under a 128 MB limit); shared memory and its waits go with it.
  delete g.WebAssembly; delete g.SharedArrayBuffer; delete g.Atomics;
  // What leaves the isolate is bounded here, before it is copied out to the daemon.
  const bounded = (text, what) => {
    if (text.length > ${maxOutputBytes}) throw new Error(what + ' is ' + text.length + ' characters, more than the ${maxOutputBytes} a tool may pass out');
    return text;
  };
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
      if (options.body !== undefined) request.body = bounded(String(options.body), 'the request body');
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
        update(chunk) { data = bounded(data + String(chunk), 'the data to hash'); return hash; },
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
  const parse = JSON.parse, stringify = JSON.stringify;
  const describe = (error) => {
    try {
      const text = error !== null && (typeof error === 'object' || typeof error === 'function') && typeof error.message === 'string' ? error.message : String(error);
      return text.length > ${MAX_ERROR_LENGTH} ? text.slice(0, ${MAX_ERROR_LENGTH}) + '…' : text;
    } catch {
      return 'a value was thrown that cannot be described';
    }
  };
  return async (json) => {
    let output;
    try {
      if (typeof execute !== 'function') return 't' + 'the tool defines no execute(input) function';
      output = await execute(parse(json));
    } catch (error) {
      return 't' + describe(error);
    }
    let text;
    try {
      text = stringify(output);
    } catch (error) {
      return 'u' + "the tool's output cannot be turned into JSON: " + describe(error);
    }
    if (typeof text !== 'string') return 'u' + 'execute(input) returned ' + (output === undefined ? 'undefined' : 'a ' + typeof output) + ', not a JSON value';
    if (text.length > ${maxOutputBytes}) return 'l' + text.length;
    return 'o' + text;
  };
})();`;
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
}

const ENCODINGS = new Set(['hex', 'base64', 'base64url']);

/** The host side of `crypto`: strings in, a JSON reply out; never throws. */
function cryptoBridge(payloadText: string): string {
  try {
    // The tool's code may have replaced JSON.stringify in its realm: the text is anything it likes.
    if (jsonTextDepth(payloadText) > MAX_JSON_DEPTH) return JSON.stringify({ error: tooDeepMessage('crypto: the arguments') });
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

/** The message isolated-vm gives when its own `timeout` stops running code. */
const TIMED_OUT = 'Script execution timed out.';

/**
 * Compiles a sandboxed tool's code for an isolate of its own (`isolated-vm`: a separate V8 heap
 * and realm). Every call gets a fresh context, the input as a JSON string, and gives back a JSON
 * string checked against the size cap before it is parsed. A call that passes its time limit, or
 * an isolate that passes its memory limit or throws a fatal error, is stopped and the isolate
 * disposed (rebuilt for the next call). Calls of one program take turns, so stopping one never
 * stops another. If V8 itself runs out of memory in the isolate (some allocation patterns, such
 * as a growing `Map`, outrun isolated-vm's limit), that isolate and its thread can never be
 * released in this process: the call is a `memory` failure, the program refuses every later call,
 * and `onCatastrophe` is told, so that the process can be replaced (see `sandbox.ts`).
 * @throws {Error} when the code does not compile (the code check reports that first).
 */
export async function compileIsolateProgram(code: string, limits: SandboxLimits, onCatastrophe?: () => void): Promise<IsolateProgram> {
  // Loaded with the first forged tool: a daemon that runs none does not hold the native module.
  const { default: isolatedVm } = await import('isolated-vm');
  let disposed = false;
  let isolate: ivm.Isolate | undefined;
  let prelude: ivm.Script | undefined;
  let program: ivm.Script | undefined;
  /** Set when V8 lost an isolate of this program to out-of-memory (see `onCatastrophicError`). */
  let lost = false;
  /** Stops the call in progress, when V8 loses its isolate. */
  let stopCall: (() => void) | undefined;
  /** The end of the last call in line: calls take turns on the one isolate. */
  let queue: Promise<void> = Promise.resolve();

  async function ready(): Promise<{ isolate: ivm.Isolate; prelude: ivm.Script; program: ivm.Script }> {
    if (isolate === undefined || isolate.isDisposed || prelude === undefined || program === undefined) {
      isolate = new isolatedVm.Isolate({
        memoryLimit: limits.memoryMb,
        // Without a handler, isolated-vm lets V8 abort the whole daemon. With one, only this
        // isolate is lost (its thread never comes back), so the program is retired for good.
        onCatastrophicError: () => {
          lost = true;
          stopCall?.();
          onCatastrophe?.();
        },
      });
      prelude = await isolate.compileScript(preludeOf(limits.maxOutputBytes), { filename: 'loom-prelude.js' });
      program = await isolate.compileScript(code, { filename: 'tool.js' });
    }
    return { isolate, prelude, program };
  }
  // Compile now, so broken code fails at forge time rather than at the first call.
  await ready();

  function kill(): void {
    if (isolate !== undefined && !isolate.isDisposed) {
      try {
        isolate.dispose();
      } catch {
        // Already going away.
      }
    }
  }

  async function run(inputJson: string, options: { bridges: IsolateBridges; signal?: AbortSignal }): Promise<IsolateOutcome> {
    const started = performance.now();
    const fail = (kind: SandboxFailure['kind'], message: string): IsolateOutcome => ({
      ok: false,
      error: { kind, message },
      durationMs: performance.now() - started,
    });
    if (disposed) return fail('aborted', 'the tool was retired');
    if (options.signal?.aborted === true) return fail('aborted', 'the call was cancelled');
    // Wait for this program's previous call: disposing the isolate to stop one call must not
    // take another caller's call with it.
    const previous = queue;
    let endTurn!: () => void;
    const turn = new Promise<void>((resolve) => {
      endTurn = resolve;
    });
    queue = previous.then(() => turn);
    try {
      if (!(await waitForTurn(previous, options.signal))) return fail('aborted', 'the call was cancelled');
      if (disposed) return fail('aborted', 'the tool was retired');
      return await runInTurn(inputJson, options, fail);
    } finally {
      endTurn();
    }
  }

  async function runInTurn(
    inputJson: string,
    options: { bridges: IsolateBridges; signal?: AbortSignal },
    failAt: (kind: SandboxFailure['kind'], message: string) => IsolateOutcome,
  ): Promise<IsolateOutcome> {
    const started = performance.now();
    const elapsed = (): number => performance.now() - started;
    const fail = (kind: SandboxFailure['kind'], message: string): IsolateOutcome => failAt(kind, message);
    const memoryFailure = (): IsolateOutcome => fail('memory', `the tool went over its ${limits.memoryMb} MB memory limit and was stopped`);
    const timeoutFailure = (): IsolateOutcome => fail('timeout', `the tool ran past its ${limits.timeoutMs} ms time limit and was stopped`);
    if (lost)
      return fail('memory', `the tool exhausted its isolate's memory in a way V8 cannot recover from; its sandbox process is being replaced, so call it again`);
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
    let cryptoCalls = 0;
    let exceeded: string | undefined;
    const tooMany = (what: string): string => {
      exceeded ??= what;
      return JSON.stringify({ error: what });
    };
    const asyncBridge = (work: (payloadText: string) => Promise<string>) =>
      new isolatedVm.Reference(async (payloadText: unknown): Promise<string> => {
        bridgeCalls += 1;
        if (bridgeCalls > MAX_BRIDGE_CALLS) return tooMany(`the tool made more than ${MAX_BRIDGE_CALLS} bridge calls (fetch, fs.readFile) in one call`);
        try {
          return await work(typeof payloadText === 'string' ? payloadText : '');
        } catch (error) {
          return JSON.stringify({ error: messageOf(error) });
        }
      });
    const { bridges } = options;
    const references: ivm.Reference[] = [];
    const timers: { timer?: NodeJS.Timeout } = {};
    let onAbort: (() => void) | undefined;
    let killed = false;
    try {
      const jail = context.global;
      if (bridges.fetch !== undefined) await jail.set('__loom_fetch', asyncBridge(bridges.fetch));
      if (bridges.readFile !== undefined) await jail.set('__loom_read', asyncBridge(bridges.readFile));
      if (bridges.crypto === true) {
        await jail.set(
          '__loom_crypto',
          new isolatedVm.Callback((payload: unknown) => {
            cryptoCalls += 1;
            if (cryptoCalls > MAX_CRYPTO_CALLS) return tooMany(`the tool made more than ${MAX_CRYPTO_CALLS} crypto calls in one call`);
            return typeof payload === 'string' ? cryptoBridge(payload) : JSON.stringify({ error: 'crypto: bad arguments' });
          }),
        );
      }
      const budget = (): number => Math.max(1, Math.ceil(limits.timeoutMs - elapsed()));
      const work = (async (): Promise<unknown> => {
        const entry = (await setup.run(context, { timeout: budget(), reference: true })) as ivm.Reference<(json: string) => Promise<string>>;
        references.push(entry);
        await code.run(context, { timeout: budget() });
        return entry.apply(undefined, [inputJson], { arguments: { copy: true }, result: { promise: true, copy: true }, timeout: budget() });
      })();
      // The host's own clock: a promise that never settles runs no code for V8's timeout to stop.
      const stopped = new Promise<'timeout' | 'aborted' | 'lost'>((resolve) => {
        timers.timer = setTimeout(() => resolve('timeout'), limits.timeoutMs + HOST_GRACE_MS);
        stopCall = () => resolve('lost');
        onAbort = () => resolve('aborted');
        if (options.signal?.aborted === true) resolve('aborted');
        else options.signal?.addEventListener('abort', onAbort, { once: true });
      });
      const settled = await Promise.race([
        work.then(
          (text) => ({ text }),
          (error: unknown) => ({ error }),
        ),
        stopped,
      ]);
      if (typeof settled === 'string') {
        work.catch(() => undefined);
        killed = true;
        kill();
        if (settled === 'lost') return memoryFailure();
        return settled === 'timeout' ? timeoutFailure() : fail('aborted', 'the call was cancelled');
      }
      if (exceeded !== undefined) return fail('bridge', exceeded);
      if ('error' in settled) {
        // Only isolated-vm rejects here (a tool's own errors come back as data): the isolate
        // disposed under the call is its memory limit; its timeout cannot fire before the budget.
        if (lost || current.isDisposed) {
          kill();
          return memoryFailure();
        }
        const message = messageOf(settled.error);
        if (message === TIMED_OUT && elapsed() >= limits.timeoutMs - 10) return timeoutFailure();
        return fail('thrown', message);
      }
      const text = settled.text;
      if (typeof text !== 'string' || text.length === 0) return fail('output', "the tool's result could not be read");
      const tag = text[0];
      const rest = text.slice(1);
      switch (tag) {
        case 't':
          return fail('thrown', messageOf(rest));
        case 'u':
          return fail('output', messageOf(rest));
        case 'l':
          return fail(
            'output',
            `the tool's output is ${Number(rest).toLocaleString('en-US')} characters of JSON, over the ${limits.maxOutputBytes.toLocaleString('en-US')}-byte cap`,
          );
        case 'o': {
          const bytes = Buffer.byteLength(rest, 'utf8');
          if (bytes > limits.maxOutputBytes)
            return fail(
              'output',
              `the tool's output is ${bytes.toLocaleString('en-US')} bytes, over the ${limits.maxOutputBytes.toLocaleString('en-US')}-byte cap`,
            );
          // Measured on the text, without recursion, before anything here or in the daemon parses
          // or copies it: JSON thousands of levels deep overflowed the native stack of whatever
          // walked it next (Node's IPC), and ended this process with every call in it.
          if (jsonTextDepth(rest) > MAX_JSON_DEPTH) return fail('output', tooDeepMessage("the tool's output"));
          return { ok: true, outputJson: rest, durationMs: performance.now() - started };
        }
        default:
          return fail('output', "the tool's result could not be read");
      }
    } catch (error) {
      // Setting up the context failed (the isolate was disposed under it): the call fails, the program lives on.
      kill();
      return fail(lost || current.isDisposed ? 'memory' : 'thrown', `the sandbox failed: ${messageOf(error)}`);
    } finally {
      stopCall = undefined;
      clearTimeout(timers.timer);
      if (onAbort !== undefined) options.signal?.removeEventListener('abort', onAbort);
      for (const reference of references) {
        try {
          reference.release();
        } catch {
          // The isolate is gone.
        }
      }
      if (!killed && !lost && !current.isDisposed) {
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
  };
}
