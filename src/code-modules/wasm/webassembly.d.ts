/**
 * The part of the platform's `WebAssembly` global that code agents use. TypeScript declares it
 * only with the DOM library, which Loom leaves out (it runs on Node, not in a browser).
 */
declare namespace WebAssembly {
  type ImportExportKind = 'function' | 'global' | 'memory' | 'table' | 'tag';
  interface ModuleImportDescriptor {
    module: string;
    name: string;
    kind: ImportExportKind;
  }
  interface ModuleExportDescriptor {
    name: string;
    kind: ImportExportKind;
  }
  type ImportValue = ((...args: never[]) => unknown) | Memory | number | bigint;
  type Imports = Record<string, Record<string, ImportValue>>;
  type Exports = Record<string, unknown>;

  class Module {
    constructor(bytes: Uint8Array);
    static imports(module: Module): ModuleImportDescriptor[];
    static exports(module: Module): ModuleExportDescriptor[];
  }
  class Instance {
    constructor(module: Module, imports?: Imports);
    readonly exports: Exports;
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number });
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  class RuntimeError extends Error {}
  class CompileError extends Error {}
  function compile(bytes: Uint8Array): Promise<Module>;
}
