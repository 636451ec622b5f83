/**
 * One thing an agent may do (spec/01, "Capability Types"). Everything not granted is denied.
 *
 * As a grant, `pattern` is a glob; as a request (what a tool call needs), it is the concrete
 * value asked for (a path, a `host:port`, a tool name), and the numeric payloads are the amount
 * asked for. The capabilities module validates these with a zod schema of the same shape.
 */
export type Capability =
  | { kind: 'file_read'; pattern: string }
  | { kind: 'file_write'; pattern: string }
  | { kind: 'net_connect'; pattern: string }
  | { kind: 'net_listen'; port: number }
  | { kind: 'tool_invoke'; pattern: string }
  | { kind: 'tool_all' }
  | { kind: 'llm_query'; pattern: string }
  | { kind: 'llm_max_tokens'; max_tokens: number }
  | { kind: 'agent_spawn' }
  | { kind: 'agent_message'; pattern: string }
  | { kind: 'agent_kill'; pattern: string }
  | { kind: 'memory_read'; pattern: string }
  | { kind: 'memory_write'; pattern: string }
  | { kind: 'shell_exec'; pattern: string }
  | { kind: 'env_read'; pattern: string }
  | { kind: 'ofp_discover' }
  | { kind: 'ofp_connect'; pattern: string }
  | { kind: 'ofp_advertise' }
  | { kind: 'econ_spend'; max_usd: number }
  | { kind: 'econ_earn' }
  | { kind: 'econ_transfer'; pattern: string };
