/**
 * Code agents (spec/01's `wasm:` and `python:` modules): the wire contract, host calls, and the
 * modules themselves: wasm modules on a shared pool of threads, Python scripts in supervised processes.
 */
export { createCodeModules } from './code-modules.ts';
export type { CodeAgent, CodeModules, CodeModulesOptions } from './code-modules.ts';
export type { CodeLimits, CodeModuleRunner } from './code-module-runner.ts';
export { answerHostCall } from './host-calls.ts';
export type { HostCallPort } from './host-calls.ts';
export { CODE_AGENT_PROTOCOL, HOST_CALLS, readReply } from './protocol.ts';
export type { CodeAgentCaller, CodeAgentReply, CodeAgentRequest, HostCall, HostCallResult } from './protocol.ts';
export { PYTHON_HELPER_DIR } from './python/python-agent.ts';
export { capMemory, WASM_PAGE_BYTES } from './wasm/wasm-binary.ts';
