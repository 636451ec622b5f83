/**
 * The one edit Loom makes to a module's binary: the maximum of its memory, so the engine itself
 * holds the module to `[code].memory_mb` (a `memory.grow` past it fails inside the module).
 * Nothing else is read or changed. See docs/decisions/0019-code-agents.md for why this is done
 * here rather than with a wasm toolkit.
 */

/** WebAssembly's page: 64 KiB. */
export const WASM_PAGE_BYTES = 65_536;

const MEMORY_SECTION = 5;
const HEADER_BYTES = 8;

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
 * `bytes` with every memory the module defines capped at `maxPages` (its declared maximum kept
 * when lower), and the initial size of the largest. The module must be valid WebAssembly
 * (compile it first); imported memories are not touched (the ABI refuses them).
 * @throws {WasmBinaryError} for a 64-bit or shared memory, or one whose initial size is already
 *   over the cap.
 */
export function capMemory(bytes: Uint8Array, maxPages: number): { bytes: Uint8Array; initialPages: number } {
  let offset = HEADER_BYTES;
  while (offset < bytes.length) {
    const id = bytes[offset] as number;
    const size = readLeb(bytes, offset + 1);
    const start = offset + 1 + size.size;
    const end = start + size.value;
    if (id !== MEMORY_SECTION) {
      offset = end;
      continue;
    }
    const count = readLeb(bytes, start);
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
        throw new WasmBinaryError(`the module's memory starts at ${minimum.value} pages (${(minimum.value * WASM_PAGE_BYTES) / 2 ** 20} MB), over its limit of ${maxPages} pages ([code].memory_mb)`);
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
