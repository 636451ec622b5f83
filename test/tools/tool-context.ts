import type { Capability, KernelHandle, ToolContext } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';

const notUsed = (): never => {
  throw new Error('not used');
};

/** A kernel handle whose every method throws "not used": file and shell tools never call it. */
export const UNUSED_KERNEL: KernelHandle = {
  spawnAgent: notUsed,
  messageAgent: notUsed,
  killAgent: notUsed,
  listAgents: notUsed,
  memoryPut: notUsed,
  generateText: () => {
    throw new Error('generateText is not used here');
  },
  memoryFind: notUsed,
};

/** What a test may set on the context it builds. */
export interface ToolContextOptions {
  workspace: string;
  capabilities?: readonly Capability[];
  signal?: AbortSignal;
  env?: Record<string, string | undefined>;
}

/** A ToolContext built by hand for one agent, `tester`, with every exec_policy flag on. */
export function createToolContext(options: ToolContextOptions): ToolContext {
  return {
    signal: options.signal ?? new AbortController().signal,
    agent: {
      id: 'agent-1',
      name: 'tester',
      workspace: options.workspace,
      capabilities: options.capabilities ?? [],
      execPolicy: { allow_shell: true, allow_network: true, allow_file_write: true },
      depth: 0,
      chain: [],
    },
    kernel: UNUSED_KERNEL,
    logger: createSilentLogger(),
    settings: {},
    env: options.env ?? {},
  };
}
