import type { Capability, CapabilityKind } from '../../src/capabilities/index.ts';

/**
 * One capability of every kind, as a grant and as what an action asks for. Keyed by kind so
 * that a new kind fails to compile here until the tests learn about it.
 */
export const ONE_OF_EACH_KIND: Readonly<Record<CapabilityKind, Capability>> = {
  file_read: { kind: 'file_read', pattern: '/data/report.txt' },
  file_write: { kind: 'file_write', pattern: '/data/out.txt' },
  net_connect: { kind: 'net_connect', pattern: 'api.openai.com:443' },
  net_listen: { kind: 'net_listen', port: 8080 },
  tool_invoke: { kind: 'tool_invoke', pattern: 'web_search' },
  tool_all: { kind: 'tool_all' },
  llm_query: { kind: 'llm_query', pattern: 'claude-sonnet-4' },
  llm_max_tokens: { kind: 'llm_max_tokens', max_tokens: 500 },
  agent_spawn: { kind: 'agent_spawn' },
  agent_message: { kind: 'agent_message', pattern: 'summarizer' },
  agent_kill: { kind: 'agent_kill', pattern: 'worker-1' },
  memory_read: { kind: 'memory_read', pattern: 'self.notes' },
  memory_write: { kind: 'memory_write', pattern: 'self.notes' },
  shell_exec: { kind: 'shell_exec', pattern: 'ls' },
  env_read: { kind: 'env_read', pattern: 'HOME' },
  ofp_discover: { kind: 'ofp_discover' },
  ofp_connect: { kind: 'ofp_connect', pattern: 'peer-7' },
  ofp_advertise: { kind: 'ofp_advertise' },
  econ_spend: { kind: 'econ_spend', max_usd: 2 },
  econ_earn: { kind: 'econ_earn' },
  econ_transfer: { kind: 'econ_transfer', pattern: 'treasurer' },
};
