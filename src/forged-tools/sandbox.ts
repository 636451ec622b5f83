import { type ChildProcess, fork } from 'node:child_process';
import { z } from 'zod';
import { installedPath } from '../config/installation.ts';
import type { JsonValue, Logger } from '../contracts/index.ts';
import { jsonTextDepth, MAX_JSON_DEPTH, measureJsonValue, safeParseJson, tooDeepMessage } from '../validation/index.ts';
import { waitForTurn } from './wait-for-turn.ts';
import { type IsolateOutcome, MAX_BRIDGE_CALLS, MAX_CRYPTO_CALLS, type SandboxFailure, type SandboxLimits, type SandboxOutcome } from './sandbox-isolate.ts';
import type { SandboxReply, SandboxRequest } from './sandbox-process.ts';

export { MAX_BRIDGE_CALLS, MAX_CRYPTO_CALLS };
export type { SandboxFailure, SandboxLimits, SandboxOutcome };

/**
 * Host functions the isolate may reach, present only when both the tool's allowlist and its
 * agent allow them. The caller implements them (through Loom's tool runner, as the agent); the
 * sandbox only carries strings across.
 */
export interface SandboxBridges {
  fetch?: (request: {
    url: string;
    method: string;
    headers: Record<string, string>;
    body?: string;
  }) => Promise<{ url: string; status: number; statusText: string; headers: Record<string, string>; body: string }>;
  readFile?: (path: string) => Promise<string>;
  /** Hashing in the sandbox: `crypto.createHash(alg)`, `crypto.createHmac(alg, key)`, `crypto.randomUUID()`. */
  crypto?: true;
}

/** A tool's code, compiled once on a warm isolate; each call runs in a fresh context. */
export interface SandboxedProgram {
  run(input: JsonValue, options: { bridges: SandboxBridges; signal?: AbortSignal }): Promise<SandboxOutcome>;
  /** Releases the isolate; a later `run` fails. */
  dispose(): void;
  readonly disposed: boolean;
}

/**
 * The sandbox processes of a daemon (or of a benchmark, a test): where its programs' isolates
 * live. One process serves every program; one that V8 lost an isolate in is replaced, and ended
 * once its calls are over.
 */
export interface SandboxPool {
  /** Ends every sandbox process now: calls under way fail as cancelled, later compiles and calls are refused. */
  close(): void;
  /** The pids of its processes now (none when no program is held and the idle time has passed). */
  pids(): number[];
}

/** How long past a call's own time limit the daemon waits for the sandbox process to answer before it ends the process. */
export const SANDBOX_PROCESS_GRACE_MS = 2_000;

/** How long a sandbox process with no programs stays, for the next forge. */
export const SANDBOX_IDLE_MS = 10_000;

/** How long a new sandbox process has to start. */
const START_TIMEOUT_MS = 30_000;

/** The sandbox process runs from the sources, in the built daemon too (see `installedPath`). */
const PROCESS_PATH = installedPath('src', 'forged-tools', 'sandbox-process.ts');

/** Longest error message carried out of the sandbox. */
const MAX_ERROR_LENGTH = 2000;

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
}

/** What an isolate's bridges send the host, checked before a bridge sees it. */
const FetchRequestSchema = z.strictObject({
  url: z.string(),
  method: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string().optional(),
});
const ReadRequestSchema = z.strictObject({ path: z.string() });

/**
 * Carries out one bridge request of an isolate: the JSON text its code sent, checked here (the
 * tool's own code may have replaced JSON.stringify inside its realm), the reply as JSON text.
 * Never throws.
 */
async function answerBridge(bridges: SandboxBridges | undefined, name: 'fetch' | 'readFile', payloadText: string): Promise<string> {
  try {
    const call = name === 'fetch' ? 'fetch()' : 'fs.readFile()';
    if (typeof payloadText !== 'string') return JSON.stringify({ error: `${call}: bad arguments` });
    if (jsonTextDepth(payloadText) > MAX_JSON_DEPTH) return JSON.stringify({ error: tooDeepMessage(`${call}: the arguments`) });
    if (name === 'fetch') {
      const fetcher = bridges?.fetch;
      if (fetcher === undefined) return JSON.stringify({ error: 'fetch() is not allowed' });
      const request = FetchRequestSchema.safeParse(JSON.parse(payloadText));
      if (!request.success) return JSON.stringify({ error: `fetch(): bad arguments (${z.prettifyError(request.error)})` });
      const { url, method, headers, body } = request.data;
      return JSON.stringify({ value: await fetcher(body === undefined ? { url, method, headers } : { url, method, headers, body }) });
    }
    const reader = bridges?.readFile;
    if (reader === undefined) return JSON.stringify({ error: 'fs.readFile() is not allowed' });
    const request = ReadRequestSchema.safeParse(JSON.parse(payloadText));
    if (!request.success) return JSON.stringify({ error: `fs.readFile(): bad arguments (${z.prettifyError(request.error)})` });
    return JSON.stringify({ value: await reader(request.data.path) });
  } catch (error) {
    return JSON.stringify({ error: messageOf(error) });
  }
}

/**
 * The daemon's reading of a call's outcome: the output's JSON text checked again for size and
 * depth (without recursion) before it is parsed, so nothing deeper than `MAX_JSON_DEPTH` is ever
 * built here from a tool's output.
 */
function readOutcome(outcome: IsolateOutcome, maxOutputBytes: number): SandboxOutcome {
  if (!outcome.ok) return outcome;
  const { outputJson, durationMs } = outcome;
  const failed = (message: string): SandboxOutcome => ({ ok: false, error: { kind: 'output', message }, durationMs });
  if (typeof outputJson !== 'string') return failed("the tool's result could not be read");
  const bytes = Buffer.byteLength(outputJson, 'utf8');
  if (bytes > maxOutputBytes)
    return failed(`the tool's output is ${bytes.toLocaleString('en-US')} bytes, over the ${maxOutputBytes.toLocaleString('en-US')}-byte cap`);
  if (jsonTextDepth(outputJson) > MAX_JSON_DEPTH) return failed(tooDeepMessage("the tool's output"));
  const parsed = safeParseJson(outputJson);
  if (!parsed.ok) return failed(`the tool's output is not JSON: ${messageOf(parsed.message)}`);
  return { ok: true, output: parsed.value as JsonValue, durationMs };
}

/** A call that failed, in either form of an outcome. */
type Failed = Extract<SandboxOutcome, { ok: false }>;

/** One sandbox process, as the daemon sees it. */
interface SandboxProcess {
  child: ChildProcess;
  started: Promise<void>;
  /** V8 lost an isolate in it: no new work goes there, and it ends once its calls are over. */
  retired: boolean;
  ended: boolean;
  /** Calls waiting for their outcome, and their bridges. */
  calls: Map<number, { finish: (outcome: IsolateOutcome) => void; bridges: SandboxBridges }>;
  /** Compiles waiting for their answer: an error message, or undefined. */
  compiles: Map<number, (error: string | undefined) => void>;
}

/** The pool's side of a program: where it is compiled now. */
interface Binding {
  process: SandboxProcess;
  id: number;
}

/** The implementation behind {@link SandboxPool}, with what `compileSandboxProgram` needs. */
interface PoolInternals extends SandboxPool {
  compile(code: string, limits: SandboxLimits): Promise<SandboxedProgram>;
}

/**
 * Creates a pool of sandbox processes. Isolates run in a child process, not in the daemon: when
 * V8 itself runs out of memory in an isolate (some allocation patterns, such as a growing `Map`,
 * outrun isolated-vm's limit), isolated-vm can never release that isolate's heap or thread, and a
 * process holding one cannot exit by itself. Here that costs the sandbox process, which is
 * replaced (the next call compiles the program again in the new one) and killed once its other
 * calls have ended; the daemon holds no isolate, so it always stops. The processes do not keep
 * the daemon alive, and the one process left is ended `SANDBOX_IDLE_MS` after its last program
 * is disposed.
 */
export function createSandboxPool(options: { logger?: Logger } = {}): SandboxPool {
  return createPoolInternals(options.logger);
}

function createPoolInternals(logger?: Logger): PoolInternals {
  const processes = new Set<SandboxProcess>();
  let current: SandboxProcess | undefined;
  let closed = false;
  let programs = 0;
  let nextId = 1;
  let idleTimer: NodeJS.Timeout | undefined;
  /** While a process has calls or compiles waiting, its channel keeps the event loop alive; otherwise it does not. */
  const wait = (process: SandboxProcess): void => {
    const channel = process.child.channel;
    if (channel === undefined || channel === null) return;
    if (process.calls.size + process.compiles.size > 0) channel.ref();
    else channel.unref();
  };

  /** Ends a process at once: what it was doing fails as cancelled. */
  function end(process: SandboxProcess, reason: string): void {
    if (process.ended) return;
    process.ended = true;
    processes.delete(process);
    if (current === process) current = undefined;
    process.child.kill('SIGKILL');
    for (const { finish } of [...process.calls.values()]) finish({ ok: false, error: { kind: 'aborted', message: reason }, durationMs: 0 });
    for (const answer of [...process.compiles.values()]) answer(reason);
    process.calls.clear();
    process.compiles.clear();
  }

  const endIfRetiredAndIdle = (process: SandboxProcess): void => {
    if (process.retired && process.calls.size === 0 && process.compiles.size === 0) end(process, 'its sandbox process was replaced');
  };

  function post(process: SandboxProcess, request: SandboxRequest): void {
    void process.started.then(
      () => {
        if (process.ended || !process.child.connected) return;
        process.child.send(request, (error: Error | null) => {
          if (error !== null) end(process, `the sandbox process could not be reached: ${error.message}`);
        });
      },
      () => undefined,
    );
  }

  function start(): SandboxProcess {
    // Nothing of the daemon's environment is needed there (keys least of all).
    const child = fork(PROCESS_PATH, [], { execArgv: [], env: {}, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'json' });
    child.unref();
    let ready!: () => void;
    let failed!: (error: Error) => void;
    const started = new Promise<void>((resolve, reject) => {
      ready = resolve;
      failed = reject;
    });
    started.catch(() => undefined);
    const process: SandboxProcess = { child, started, retired: false, ended: false, calls: new Map(), compiles: new Map() };
    processes.add(process);
    const startTimer = setTimeout(() => {
      failed(new Error(`the sandbox process did not start within ${START_TIMEOUT_MS / 1000} s`));
      end(process, 'the sandbox process did not start');
    }, START_TIMEOUT_MS);
    startTimer.unref();
    child.on('message', (reply: SandboxReply) => {
      switch (reply.type) {
        case 'ready':
          clearTimeout(startTimer);
          ready();
          return;
        case 'compiled':
          process.compiles.get(reply.program)?.(reply.error);
          return;
        case 'outcome':
          process.calls.get(reply.call)?.finish(reply.outcome);
          return;
        case 'bridge': {
          const bridges = process.calls.get(reply.call)?.bridges;
          void answerBridge(bridges, reply.name, reply.payload).then((text) =>
            post(process, { type: 'bridge-reply', call: reply.call, seq: reply.seq, reply: text }),
          );
          return;
        }
        case 'lost':
          logger?.warn(
            { pid: child.pid ?? null, calls: process.calls.size },
            'V8 lost an isolate to out-of-memory in a sandbox process; it is replaced, and ended once its calls are over',
          );
          process.retired = true;
          if (current === process) current = undefined;
          endIfRetiredAndIdle(process);
          return;
      }
    });
    child.on('error', (error) => {
      clearTimeout(startTimer);
      failed(error);
      end(process, `the sandbox process failed: ${error.message}`);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(startTimer);
      // Ended by the pool (idle, replaced, stopped, stuck), it was logged or meant; otherwise it died.
      if (!process.ended) {
        logger?.error(
          { pid: child.pid ?? null, exitCode: code, signal, calls: process.calls.size, compiles: process.compiles.size },
          `a sandbox process ended unexpectedly (${signal ?? `exit code ${code ?? '?'}`}); its ${process.calls.size} calls and ${process.compiles.size} compiles under way fail, and the next starts a new one`,
        );
      }
      failed(new Error(`the sandbox process ended (${signal ?? `exit code ${code ?? '?'}`})`));
      end(process, `the sandbox process ended (${signal ?? `exit code ${code ?? '?'}`})`);
    });
    // Until it answers its first request, a starting process keeps the event loop alive through its waiters.
    child.channel?.unref();
    return process;
  }

  function live(): SandboxProcess {
    if (current === undefined || current.retired || current.ended) current = start();
    return current;
  }

  async function bind(code: string, limits: SandboxLimits): Promise<Binding> {
    if (closed) throw new Error('the sandbox is closed: Loom is stopping');
    const process = live();
    const id = nextId++;
    const error = await new Promise<string | undefined>((resolve) => {
      process.compiles.set(id, (answer) => {
        process.compiles.delete(id);
        wait(process);
        resolve(answer);
        endIfRetiredAndIdle(process);
      });
      wait(process);
      post(process, { type: 'compile', program: id, code, limits });
    });
    if (error !== undefined) throw new Error(error);
    return { process, id };
  }

  function programDisposed(): void {
    programs -= 1;
    if (programs > 0 || closed) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      for (const process of [...processes]) if (process.calls.size === 0 && process.compiles.size === 0) end(process, 'the sandbox process was idle');
    }, SANDBOX_IDLE_MS);
    idleTimer.unref();
  }

  async function compile(code: string, limits: SandboxLimits): Promise<SandboxedProgram> {
    clearTimeout(idleTimer);
    programs += 1;
    let binding: Binding;
    try {
      binding = await bind(code, limits);
    } catch (error) {
      programDisposed();
      throw error;
    }
    let disposed = false;
    /** The end of the last call in line: calls take turns, so stopping one never stops another. */
    let queue: Promise<void> = Promise.resolve();

    const release = (old: Binding): void => {
      if (!old.process.ended) post(old.process, { type: 'dispose', program: old.id });
    };

    async function bound(): Promise<Binding> {
      if (!binding.process.retired && !binding.process.ended) return binding;
      release(binding);
      binding = await bind(code, limits);
      return binding;
    }

    async function run(input: JsonValue, options: { bridges: SandboxBridges; signal?: AbortSignal }): Promise<SandboxOutcome> {
      const started = performance.now();
      const fail = (kind: SandboxFailure['kind'], message: string): Failed => ({
        ok: false,
        error: { kind, message },
        durationMs: performance.now() - started,
      });
      if (disposed) return fail('aborted', 'the tool was retired');
      const { signal } = options;
      if (signal?.aborted === true) return fail('aborted', 'the call was cancelled');
      // The tool runner checks every input's depth; a direct caller's (a forge's test case) too.
      if (measureJsonValue(input).depth > MAX_JSON_DEPTH) return fail('thrown', tooDeepMessage('the input'));
      let inputJson: string;
      try {
        inputJson = JSON.stringify(input);
      } catch (error) {
        return fail('thrown', `the input cannot be turned into JSON: ${messageOf(error)}`);
      }
      const previous = queue;
      let endTurn!: () => void;
      const turn = new Promise<void>((resolve) => {
        endTurn = resolve;
      });
      queue = previous.then(() => turn);
      try {
        if (!(await waitForTurn(previous, signal))) return fail('aborted', 'the call was cancelled');
        if (disposed) return fail('aborted', 'the tool was retired');
        let target: Binding;
        try {
          target = await bound();
        } catch (error) {
          return fail(closed ? 'aborted' : 'thrown', `the sandbox could not start: ${messageOf(error)}`);
        }
        return await call(target, inputJson, options, fail);
      } finally {
        endTurn();
      }
    }

    function call(
      target: Binding,
      inputJson: string,
      options: { bridges: SandboxBridges; signal?: AbortSignal },
      fail: (kind: SandboxFailure['kind'], message: string) => Failed,
    ): Promise<SandboxOutcome> {
      const { process } = target;
      const { bridges, signal } = options;
      const id = nextId++;
      return new Promise<SandboxOutcome>((resolve) => {
        // The process stops a call at its limit itself; one that does not answer long after is stuck, and is ended.
        const timer = setTimeout(() => {
          finish(fail('timeout', `the tool ran past its ${limits.timeoutMs} ms time limit and its sandbox process did not stop it, so the process was ended`));
          logger?.warn(
            { pid: process.child.pid ?? null, calls: process.calls.size, timeoutMs: limits.timeoutMs },
            "a sandbox process stopped answering past a call's time limit and was ended; its other calls fail",
          );
          end(process, 'its sandbox process stopped answering and was ended');
        }, limits.timeoutMs + SANDBOX_PROCESS_GRACE_MS);
        const onAbort = (): void => {
          post(process, { type: 'abort', call: id });
          finish(fail('aborted', 'the call was cancelled'));
        };
        const finish = (outcome: IsolateOutcome): void => {
          if (!process.calls.has(id)) return;
          process.calls.delete(id);
          wait(process);
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(readOutcome(outcome, limits.maxOutputBytes));
          endIfRetiredAndIdle(process);
        };
        process.calls.set(id, { finish, bridges });
        wait(process);
        signal?.addEventListener('abort', onAbort, { once: true });
        post(process, {
          type: 'run',
          program: target.id,
          call: id,
          inputJson,
          bridges: { fetch: bridges.fetch !== undefined, readFile: bridges.readFile !== undefined, crypto: bridges.crypto === true },
        });
      });
    }

    return {
      run,
      dispose() {
        if (disposed) return;
        disposed = true;
        release(binding);
        programDisposed();
      },
      get disposed() {
        return disposed;
      },
    };
  }

  return {
    compile,
    close() {
      closed = true;
      clearTimeout(idleTimer);
      for (const process of [...processes]) end(process, 'Loom is stopping');
    },
    pids: () => [...processes].filter((process) => !process.ended && process.child.pid !== undefined).map((process) => process.child.pid as number),
  };
}

let sharedPool: PoolInternals | undefined;

/**
 * Compiles a sandboxed tool's code for an isolate of its own (`isolated-vm`: a separate V8 heap
 * and realm, in a sandbox process of `pool`, never in the daemon). Every call gets a fresh
 * context, the input as a JSON string, and gives back a JSON string checked against the size cap
 * before it is parsed. A call that passes its time limit, or an isolate that passes its memory
 * limit or meets a fatal error, is stopped and its isolate disposed (rebuilt for the next call).
 * If V8 itself runs out of memory in the isolate, the call is a `memory` failure and the sandbox
 * process is replaced: the next call runs in a new one. Calls of one program take turns, so
 * stopping one never stops another.
 * @param options.pool the pool to run in (a daemon's own, so that it ends with it); by default one
 *   shared by the process.
 * @throws {Error} when the code does not compile (the code check reports that first), or the
 *   pool is closed.
 */
export async function compileSandboxProgram(code: string, limits: SandboxLimits, options: { pool?: SandboxPool } = {}): Promise<SandboxedProgram> {
  const pool = (options.pool as PoolInternals | undefined) ?? (sharedPool ??= createPoolInternals());
  return pool.compile(code, limits);
}
