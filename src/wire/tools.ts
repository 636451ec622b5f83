/** A tool call waiting for (or given) a person's approval, as `/api/approvals` lists it. */
export interface ApprovalView {
  id: string;
  agent_id: string;
  /** The agent's name when the request was made. */
  agent: string;
  tool: string;
  input: unknown;
  status: 'pending' | 'approved' | 'denied' | 'expired';
  requested_at: string;
  /** When it is denied (status `expired`) if nobody decides. */
  expires_at: string;
  decided_at: string | null;
  /** A key's name, `local`, or `timeout`, `cancel` or `restart` when Loom closed it. */
  decided_by: string | null;
  reason: string | null;
}

/** A forged tool, as `/api/tools/forged` shows it. */
export interface ForgedToolView {
  id: string;
  name: string;
  description: string;
  agent: string;
  agentId: string;
  tier: 'session' | 'agent' | 'shared';
  status: 'active' | 'demoted' | 'retired';
  statusReason: string | null;
  mode: 'compose' | 'sandbox';
  origin: 'forged' | 'imported';
  calls: number;
  successRate: number | null;
  meanLatencyMs: number | null;
  verdicts: { role?: string; approved?: boolean; confidence?: number; issues?: string[]; at?: number }[];
  codeHash: string | null;
  sourcePersisted: boolean;
  /** The request as stored (a sandbox tool's code only when its source is persisted). */
  request: {
    inputSchema?: unknown;
    outputSchema?: unknown;
    implementation?: { mode: string; steps?: { name: string; tool: string; inputMapping?: unknown }[]; code?: string; allowlist?: string[] };
  };
  createdAt: number;
  updatedAt: number;
}

/** What promoting a forged tool did: promoted, refused (why), or waiting for a person's approval (its id). */
export interface PromotionView {
  tool: ForgedToolView;
  outcome: 'promoted' | 'refused' | 'pending-approval';
  reason: string | null;
  approvalId?: string;
}

/** An MCP server Loom is a client of, as `/api/mcp/servers` and `loom mcp servers` show it. */
export interface McpServerView {
  name: string;
  transport: 'stdio' | 'sse' | 'http';
  status: 'connecting' | 'connected' | 'failed' | 'not started';
  error?: string;
  tools: { name: string; description: string }[];
  /** The server's tools left out of agents' tools, with why (a schema Loom refuses); absent when none. */
  refused_tools?: { name: string; reason: string }[];
  /** The protocol era of the connection: `modern` is 2026-07-28 and later, `legacy` the 2025 revisions. */
  era?: 'modern' | 'legacy';
  /** The protocol revision negotiated, e.g. `2026-07-28`. */
  protocol_version?: string;
  /** Why the 2025 era was chosen. */
  era_reason?: string;
  /** What a person must do first, with the exact command (`loom mcp login <server>`). */
  action?: { kind: 'login'; command: string; reason: string };
}
