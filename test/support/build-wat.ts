import binaryen from 'binaryen';

/**
 * The binary of a module written in the WebAssembly text format, for what AssemblyScript cannot
 * express (several memories, GC types, an exact sequence of WASI calls). Binaryen comes with
 * AssemblyScript, which the tests build their other modules with; every proposal it knows is
 * enabled, so a module Loom must refuse can be written at all.
 * @throws {Error} when the text is not a valid module.
 */
export function buildWat(text: string): Uint8Array {
  const module = binaryen.parseText(text);
  try {
    module.setFeatures(binaryen.Features.All);
    if (!module.validate()) throw new Error('buildWat: the module is not valid WebAssembly (binaryen printed why above)');
    return module.emitBinary();
  } finally {
    module.dispose();
  }
}
