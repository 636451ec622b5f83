import { capMemory, refuseGcTypes, WASM_PAGE_BYTES, WasmBinaryError } from './wasm-binary.ts';

/**
 * The two ABIs a `wasm:` module may follow (docs/code-agents.md):
 * - `core`: exports `memory`, `loom_alloc(size: i32) -> i32` and
 *   `loom_handle(ptr: i32, len: i32) -> i64` (the request's JSON bytes in; the reply's location
 *   out as `ptr << 32 | len`);
 * - `wasi`: a WASI preview 1 command (`_start`) reading the request on stdin and writing the
 *   reply on stdout.
 * Both may import `loom.host_call(ptr: i32, len: i32) -> i64` for host calls, answered the
 * same way (the result written into memory from `loom_alloc`).
 */
export type WasmAbi = 'core' | 'wasi';

export const CORE_EXPORTS = { memory: 'memory', loom_alloc: 'function', loom_handle: 'function' } as const;
export const HOST_MODULE = 'loom';
export const HOST_CALL = 'host_call';
export const WASI_MODULE = 'wasi_snapshot_preview1';

/** A module ready to instantiate: compiled with its memory capped, and its ABI. */
export interface PreparedModule {
  module: WebAssembly.Module;
  abi: WasmAbi;
  /** Whether it imports `loom.host_call`. */
  hostCalls: boolean;
}

/**
 * Compiles a module's bytes for a code agent: valid WebAssembly, imports Loom provides, the
 * exports of one ABI, no GC types, one memory at most, capped at `memoryMb`.
 * @throws {Error} a sentence naming what is wrong or missing.
 */
export async function prepareWasmModule(bytes: Uint8Array, memoryMb: number): Promise<PreparedModule> {
  let module: WebAssembly.Module;
  try {
    module = await WebAssembly.compile(bytes);
  } catch (error) {
    throw new Error(`it is not a WebAssembly module: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const foreign = WebAssembly.Module.imports(module).filter(
    (entry) =>
      !((entry.module === HOST_MODULE && entry.name === HOST_CALL && entry.kind === 'function') || (entry.module === WASI_MODULE && entry.kind === 'function')),
  );
  if (foreign.length > 0) {
    const names = foreign.map((entry) => `${entry.module}.${entry.name} (${entry.kind})`).join(', ');
    throw new Error(
      `it imports ${names}, which Loom does not provide; a code agent's module may import only ${HOST_MODULE}.${HOST_CALL} and ${WASI_MODULE} functions`,
    );
  }
  const exports = new Map(WebAssembly.Module.exports(module).map((entry) => [entry.name, entry.kind]));
  let abi: WasmAbi;
  if (exports.get('_start') === 'function') abi = 'wasi';
  else {
    const missing = Object.entries(CORE_EXPORTS).filter(([name, kind]) => exports.get(name) !== kind);
    if (missing.length > 0) {
      throw new Error(
        `it follows neither ABI: a WASI command exports _start, and a core module exports memory, loom_alloc and loom_handle; it lacks ${missing.map(([name, kind]) => `${name} (${kind})`).join(', ')}`,
      );
    }
    abi = 'core';
  }
  const hostCalls = WebAssembly.Module.imports(module).some((entry) => entry.module === HOST_MODULE);
  if (hostCalls && (exports.get('loom_alloc') !== 'function' || exports.get('memory') !== 'memory')) {
    throw new Error(`it imports ${HOST_MODULE}.${HOST_CALL} but does not export memory and loom_alloc, where Loom writes the results of host calls`);
  }
  let capped: Uint8Array;
  try {
    refuseGcTypes(bytes);
    capped = capMemory(bytes, Math.floor((memoryMb * 2 ** 20) / WASM_PAGE_BYTES)).bytes;
  } catch (error) {
    if (error instanceof WasmBinaryError) throw new Error(error.message, { cause: error });
    throw error;
  }
  return { module: capped === bytes ? module : await WebAssembly.compile(capped), abi, hostCalls };
}
