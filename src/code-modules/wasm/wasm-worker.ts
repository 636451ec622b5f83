/**
 * A thread of the wasm pool, where `wasm:` agents' modules run away from the daemon's event
 * loop: a module that spins stalls this thread only, and the daemon stops it with `terminate()`.
 * A thread serves any agent's module, one message at a time; each message runs on a fresh
 * instance of the module (compiled once by the daemon, sent here once and kept), so nothing
 * survives from one message to the next but what the module keeps in its session.
 *
 * Host calls are synchronous for the module: the thread posts the call on `hostPort`, sleeps on
 * `signal` (a shared word) until the daemon has answered, and takes the answer off the port.
 */
import { closeSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { devNull } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { withFixedDescriptors } from './wasi-descriptors.ts';
import { createWasiOutput } from './wasi-output.ts';
import { withWakeableSleep } from './wasi-sleep.ts';
import { HOST_CALL, HOST_MODULE, type PreparedModule, WASI_MODULE } from './wasm-abi.ts';
import { WASM_PAGE_BYTES } from './wasm-binary.ts';

/** What the daemon starts the thread with. */
export interface WasmWorkerData {
  /** A folder of the daemon's for a WASI module's stdin, removed after each message and with the thread (stdout and stderr stay in memory). */
  scratch: string;
  hostPort: MessagePort;
  signal: SharedArrayBuffer;
}

/** One message for one agent's module. */
export interface WasmJob {
  type: 'turn';
  /** The module's id in the daemon; `module` comes with the first job of that id on a thread. */
  moduleId: number;
  module?: PreparedModule;
  /** The agent's name (a WASI module's `argv[0]`). */
  name: string;
  memoryMb: number;
  maxReplyBytes: number;
  /** The environment a WASI module sees: only what the agent's `env_read` grants. */
  env: Record<string, string>;
  request: string;
}

/** What the thread tells the daemon. */
export type WasmWorkerMessage =
  | { type: 'reply'; json: string }
  | { type: 'missing-module'; moduleId: number }
  | { type: 'fault'; fault: 'trap' | 'memory' | 'too-large' | 'protocol' | 'exited'; message: string }
  | { type: 'log'; message: string };

/** A host call on its way to the daemon. */
export interface HostCallMessage {
  json: string;
}

type FaultKind = Extract<WasmWorkerMessage, { type: 'fault' }>['fault'];

class Fault extends Error {
  readonly fault: FaultKind;

  constructor(fault: FaultKind, message: string) {
    super(message);
    this.fault = fault;
  }
}

interface CoreExports {
  memory: WebAssembly.Memory;
  loom_alloc: (size: number) => number;
  loom_handle: (pointer: number, length: number) => bigint;
}

const data = workerData as WasmWorkerData;
const port = parentPort as NonNullable<typeof parentPort>;
const flag = new Int32Array(data.signal);
const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();
/** The modules this thread has been sent, by id; the oldest go past this many. */
const MODULES_KEPT = 256;
const modules = new Map<number, PreparedModule>();
/** The message being answered. */
let job: WasmJob;

function post(message: WasmWorkerMessage): void {
  port.postMessage(message);
}

/** `length` bytes at `pointer` of `memory` as UTF-8 text. */
function readText(memory: WebAssembly.Memory, pointer: number, length: number, what: string): string {
  if (length > job.maxReplyBytes)
    throw new Fault('too-large', `the module's ${what} is ${length} bytes, over its limit of ${job.maxReplyBytes} ([code].max_reply_bytes)`);
  if (pointer < 0 || length < 0 || pointer + length > memory.buffer.byteLength) {
    throw new Fault('protocol', `the module's ${what} lies outside its memory (${length} bytes at ${pointer}, memory of ${memory.buffer.byteLength} bytes)`);
  }
  try {
    return decoder.decode(new Uint8Array(memory.buffer, pointer, length));
  } catch {
    throw new Fault('protocol', `the module's ${what} is not UTF-8 text`);
  }
}

/** Copies `text` into the module's memory through its allocator; the location, packed as the ABI returns it. */
function writeText(exports: CoreExports, text: string): bigint {
  const bytes = encoder.encode(text);
  const pointer = exports.loom_alloc(bytes.length) >>> 0;
  if (pointer + bytes.length > exports.memory.buffer.byteLength)
    throw new Fault('protocol', `loom_alloc(${bytes.length}) returned ${pointer}, outside the module's memory`);
  new Uint8Array(exports.memory.buffer, pointer, bytes.length).set(bytes);
  return (BigInt(pointer) << 32n) | BigInt(bytes.length);
}

function unpack(packed: bigint): { pointer: number; length: number } {
  const value = BigInt.asUintN(64, packed);
  return { pointer: Number(value >> 32n), length: Number(value & 0xffff_ffffn) };
}

/** Asks the daemon and sleeps until it answers. */
function callHost(json: string): string {
  Atomics.store(flag, 0, 0);
  data.hostPort.postMessage({ json } satisfies HostCallMessage);
  Atomics.wait(flag, 0, 0);
  const answer = receiveMessageOnPort(data.hostPort);
  if (answer === undefined) throw new Fault('protocol', 'the daemon did not answer a host call');
  return (answer.message as { json: string }).json;
}

/** The `loom` imports of an instance whose exports `current()` gives once it exists. */
function hostImports(current: () => CoreExports | undefined): WebAssembly.Imports {
  return {
    [HOST_MODULE]: {
      [HOST_CALL]: (pointer: number, length: number): bigint => {
        const exports = current();
        if (exports === undefined) throw new Fault('protocol', 'the module made a host call while it was being instantiated');
        const call = readText(exports.memory, pointer >>> 0, length >>> 0, 'host call');
        return writeText(exports, callHost(call));
      },
    },
  };
}

function runCore(prepared: PreparedModule, request: string): string {
  const bound: { exports?: CoreExports } = {};
  const exports = new WebAssembly.Instance(
    prepared.module,
    hostImports(() => bound.exports),
  ).exports as unknown as CoreExports;
  bound.exports = exports;
  const memory = exports.memory;
  try {
    const input = unpack(writeText(exports, request));
    const output = unpack(exports.loom_handle(input.pointer, input.length));
    return readText(memory, output.pointer, output.length, 'reply');
  } catch (error) {
    throw asFault(error, memory);
  }
}

function runWasi(prepared: PreparedModule, request: string): string {
  const stdinPath = join(data.scratch, 'stdin');
  const bound: { exports?: CoreExports } = {};
  const output = createWasiOutput({
    maxReplyBytes: job.maxReplyBytes,
    memory: () => bound.exports?.memory,
    tooLarge: (message) => new Fault('too-large', message),
  });
  const fds: number[] = [];
  try {
    writeFileSync(stdinPath, request);
    fds.push(openSync(stdinPath, 'r'));
    // Writes to stdout and stderr are answered in memory (wasi-output.ts), bounded as they
    // happen; node:wasi gets the null device for them, so nothing else a module does with
    // those descriptors (fd_allocate, fd_filestat_set_size) can reach the disk either.
    fds.push(openSync(devNull, 'w'), openSync(devNull, 'w'));
    const [stdin, stdout, stderr] = fds as [number, number, number];
    const wasi = new WASI({ version: 'preview1', args: [job.name], env: job.env, stdin, stdout, stderr, returnOnExit: true });
    // The module may not close or renumber these: they are numbers in the daemon's table that
    // Loom closes below (wasi-descriptors.ts). Its sleeps are ones terminate() can end (wasi-sleep.ts).
    const wasiImport = withWakeableSleep(withFixedDescriptors(wasi.wasiImport as Record<string, WebAssembly.ImportValue>), () => bound.exports?.memory);
    const imports = { [WASI_MODULE]: output.imports(wasiImport) };
    const instance = new WebAssembly.Instance(prepared.module, { ...imports, ...(prepared.hostCalls ? hostImports(() => bound.exports) : {}) });
    bound.exports = instance.exports as unknown as CoreExports;
    let code: number;
    try {
      code = wasi.start(instance);
    } catch (error) {
      throw asFault(error, bound.exports.memory);
    }
    if (code !== 0) {
      const last = output.stderrLines().slice(-3);
      throw new Fault('exited', `the module exited with code ${code}${last.length === 0 ? '' : `: ${last.map((line) => line.trim()).join(' | ')}`}`);
    }
    try {
      return decoder.decode(output.stdout());
    } catch {
      throw new Fault('protocol', "the module's reply is not UTF-8 text");
    }
  } finally {
    for (const line of output.stderrLog()) post({ type: 'log', message: line });
    for (const fd of fds) closeSync(fd);
    rmSync(stdinPath, { force: true });
  }
}

/**
 * A trap as the fault it is: near the memory limit, a memory fault; else a trap with V8's words.
 * Near is where a `memory.grow` failed (allocators grow by several pages at once).
 */
function asFault(error: unknown, memory: WebAssembly.Memory | undefined): Error {
  if (error instanceof Fault) return error;
  const message = error instanceof Error ? error.message : String(error);
  const capBytes = job.memoryMb * 2 ** 20;
  if (memory !== undefined && capBytes - memory.buffer.byteLength < Math.max(16 * WASM_PAGE_BYTES, capBytes / 8)) {
    return new Fault('memory', `the module reached its ${job.memoryMb} MB memory limit ([code].memory_mb) and stopped: ${message}`);
  }
  if (error instanceof RangeError && /call stack/i.test(message)) return new Fault('trap', `the module overflowed its stack: ${message}`);
  return new Fault('trap', `the module trapped: ${message}`);
}

port.on('message', (message: WasmJob) => {
  job = message;
  if (message.module !== undefined) {
    modules.set(message.moduleId, message.module);
    if (modules.size > MODULES_KEPT) modules.delete(modules.keys().next().value as number);
  }
  const prepared = modules.get(message.moduleId);
  if (prepared === undefined) {
    post({ type: 'missing-module', moduleId: message.moduleId });
    return;
  }
  try {
    const json = prepared.abi === 'core' ? runCore(prepared, message.request) : runWasi(prepared, message.request);
    post({ type: 'reply', json });
  } catch (error) {
    const fault = error instanceof Fault ? error : asFault(error, undefined);
    post({ type: 'fault', fault: (fault as Fault).fault, message: fault.message });
  }
});
