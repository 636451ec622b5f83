import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/**
 * How a code agent's module failed a message: it ran past its time limit, reached its memory
 * limit, trapped, exited, broke the wire protocol, answered too much, or answered with an error
 * of its own. `load` is a module that could not be started at all.
 */
export type CodeModuleFault = 'timeout' | 'memory' | 'trap' | 'exited' | 'protocol' | 'too-large' | 'error' | 'load';

/** A `wasm:` or `python:` agent's module failed a message; `details.fault` says how. */
export class CodeModuleError extends LoomError {
  readonly fault: CodeModuleFault;

  constructor(fault: CodeModuleFault, message: string, options: LoomErrorOptions = {}) {
    super('CODE_MODULE_FAILED', 'third-party', message, { ...options, details: { fault, ...options.details } });
    this.fault = fault;
  }
}
