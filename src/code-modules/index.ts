/**
 * Code agents (spec/01's `wasm:` and `python:` modules): the wire contract, host calls, and the
 * modules themselves: wasm modules on a shared pool of threads, Python scripts in supervised processes.
 */
export { createCodeModules } from './code-modules.ts';
export type { CodeModules, CodeModulesOptions } from './code-modules.ts';
export type { HostCallPort } from './host-calls.ts';
export { CODE_AGENT_PROTOCOL } from './protocol.ts';
export { createLineBudget, MODULE_LOG_BYTES, MODULE_LOG_LINES } from './line-budget.ts';
