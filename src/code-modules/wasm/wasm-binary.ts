/**
 * The one edit Loom makes to a module's binary: the maximum of its memory, so the engine itself
 * holds the module to `[code].memory_mb` (a `memory.grow` past it fails inside the module). The
 * only other thing read is the type section, for GC types. See docs/decisions/0019-code-agents.md
 * for why this is done here rather than with a wasm toolkit.
 */

/** WebAssembly's page: 64 KiB. */
export const WASM_PAGE_BYTES = 65_536;

const TYPE_SECTION = 1;
const MEMORY_SECTION = 5;
const HEADER_BYTES = 8;
/** A function type's form in the type section; every other form is the GC proposal's. */
const FUNC_TYPE = 0x60;
const GC_FORMS: Record<number, string> = { 0x5f: 'a struct', 0x5e: 'an array', 0x50: 'a subtype', 0x4f: 'a final subtype', 0x4e: 'a recursion group' };
/** Value types followed by a heap type (`ref null ht`, `ref ht`), and the prefix of a shared one. */
const REF_NULL = 0x63;
const REF = 0x64;
const SHARED = 0x65;

/** A problem with a module's binary, as a sentence. */
export class WasmBinaryError extends Error {}

/** An unsigned LEB128 number at `offset`: its value and how many bytes it took. */
function readLeb(bytes: Uint8Array, offset: number): { value: number; size: number } {
  let value = 0;
  let shift = 0;
  for (let size = 1; size <= 5; size += 1) {
    const byte = bytes[offset + size - 1];
    if (byte === undefined) throw new WasmBinaryError('the module ends in the middle of a number');
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value, size };
    shift += 7;
  }
  throw new WasmBinaryError('the module holds a number longer than 32 bits where one is expected');
}

/** Where the LEB128 number at `offset` ends (signed or not, of any width). */
function skipLeb(bytes: Uint8Array, offset: number): number {
  let at = offset;
  while (((bytes[at] ?? 0) & 0x80) !== 0) at += 1;
  return at + 1;
}

/** Where the vector of value types at `offset` ends. */
function skipValueTypes(bytes: Uint8Array, offset: number): number {
  const count = readLeb(bytes, offset);
  let at = offset + count.size;
  for (let index = 0; index < count.value; index += 1) {
    const type = bytes[at];
    at += 1;
    if (type === REF_NULL || type === REF) {
      if (bytes[at] === SHARED) at += 1;
      at = skipLeb(bytes, at);
    }
  }
  return at;
}

/** The sections of a module: each one's id, where it begins (its id byte), and its content's bounds. */
function* sections(bytes: Uint8Array): Generator<{ id: number; offset: number; start: number; end: number }> {
  let offset = HEADER_BYTES;
  while (offset < bytes.length) {
    const id = bytes[offset] as number;
    const size = readLeb(bytes, offset + 1);
    const start = offset + 1 + size.size;
    const end = start + size.value;
    yield { id, offset, start, end };
    offset = end;
  }
}

/**
 * Refuses a module that declares GC types (the GC proposal's structs, arrays, subtypes and
 * recursion groups): their objects live on the engine's heap, not in the module's memory, so
 * `[code].memory_mb` does not hold them, and a thread allocating them in a loop may not stop when
 * it is terminated. Without such a type a module cannot allocate a GC object. The module must be
 * valid WebAssembly (compile it first).
 * @throws {WasmBinaryError} naming the first GC type.
 */
export function refuseGcTypes(bytes: Uint8Array): void {
  for (const section of sections(bytes)) {
    if (section.id !== TYPE_SECTION) continue;
    const count = readLeb(bytes, section.start);
    let at = section.start + count.size;
    for (let index = 0; index < count.value; index += 1) {
      const form = bytes[at] as number;
      if (form !== FUNC_TYPE) {
        throw new WasmBinaryError(
          `the module declares WebAssembly GC types (type ${index} is ${GC_FORMS[form] ?? `of form 0x${form.toString(16)}`}); their objects live outside its memory, where [code].memory_mb cannot cap them, so code agents run modules without them`,
        );
      }
      at = skipValueTypes(bytes, skipValueTypes(bytes, at + 1));
    }
  }
}

function writeLeb(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    const byte = rest % 128;
    rest = Math.floor(rest / 128);
    out.push(rest === 0 ? byte : byte | 0x80);
  } while (rest !== 0);
  return out;
}

/**
 * `bytes` with the memory the module defines capped at `maxPages` (its declared maximum kept
 * when lower), and its initial size. The module must be valid WebAssembly (compile it first);
 * imported memories are not touched (the ABI refuses them).
 * @throws {WasmBinaryError} for more than one memory, a 64-bit or shared memory, or one whose
 *   initial size is already over the cap.
 */
export function capMemory(bytes: Uint8Array, maxPages: number): { bytes: Uint8Array; initialPages: number } {
  for (const { id, offset, start, end } of sections(bytes)) {
    if (id !== MEMORY_SECTION) continue;
    const count = readLeb(bytes, start);
    // The cap holds per memory, so with several (multi-memory) their sum would pass it.
    if (count.value > 1) {
      throw new WasmBinaryError(`the module defines ${count.value} memories; a code agent's module may have one, which [code].memory_mb caps`);
    }
    const body: number[] = [...writeLeb(count.value)];
    let at = start + count.size;
    let initialPages = 0;
    for (let index = 0; index < count.value; index += 1) {
      const flags = bytes[at] as number;
      if ((flags & 0x04) !== 0) throw new WasmBinaryError('the module uses a 64-bit memory; code agents run 32-bit modules');
      if ((flags & 0x02) !== 0) throw new WasmBinaryError('the module uses a shared memory; code agents run single-threaded modules');
      const minimum = readLeb(bytes, at + 1);
      at += 1 + minimum.size;
      let maximum = maxPages;
      if ((flags & 0x01) !== 0) {
        const declared = readLeb(bytes, at);
        at += declared.size;
        maximum = Math.min(declared.value, maxPages);
      }
      if (minimum.value > maxPages) {
        throw new WasmBinaryError(
          `the module's memory starts at ${minimum.value} pages (${(minimum.value * WASM_PAGE_BYTES) / 2 ** 20} MB), over its limit of ${maxPages} pages ([code].memory_mb)`,
        );
      }
      initialPages = Math.max(initialPages, minimum.value);
      body.push(0x01, ...writeLeb(minimum.value), ...writeLeb(maximum));
    }
    const section = [MEMORY_SECTION, ...writeLeb(body.length), ...body];
    const out = new Uint8Array(offset + section.length + (bytes.length - end));
    out.set(bytes.subarray(0, offset), 0);
    out.set(section, offset);
    out.set(bytes.subarray(end), offset + section.length);
    return { bytes: out, initialPages };
  }
  return { bytes, initialPages: 0 };
}
