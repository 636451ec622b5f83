/** The HTTP API's shapes, as the dashboard reads them (mirrors src/kernel/agent-view.ts and friends). */

export type AgentState = 'running' | 'suspended' | 'terminated' | (string & {});

export interface Capability {
  kind: string;
  [key: string]: unknown;
}

export interface AgentView {
  id: string;
  name: string;
  version: string;
  description: string;
  state: AgentState;
  parent: string | null;
  children: string[];
  session_id: string;
  module: string;
  schedule: string;
  model: string | null;
  tags: string[];
  capabilities: Capability[];
  created_at: string;
  updated_at: string;
}

export interface AgentDetailView extends AgentView {
  manifest: Record<string, unknown>;
}

export interface UsageRow {
  agent_id: string;
  agent: string | null;
  model: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

export interface TurnView {
  text: string;
  usage: { input_tokens: number; output_tokens: number };
  iterations: number;
  cost_usd: number;
  model: string;
}

export interface SessionView {
  id: string;
  messages: readonly unknown[];
}

/** An agent event as `POST …/messages` streams it (a finished run carries the turn view). */
export type AgentEvent =
  | { type: 'run-start'; runId: string; agentId: string; agentName: string }
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; text: string; isError: boolean }
  | { type: 'approval-request'; approvalId: string; toolCallId: string; toolName: string; input: unknown; expiresAt: string }
  | { type: 'phase'; phase: string; detail: string }
  | { type: 'run-finish'; result: TurnView }
  | { type: 'error'; code: string; category: string; message: string };

/** A kernel event from `/api/events`. */
export interface KernelEvent {
  type: string;
  at: number;
  agentId: string;
  name: string;
  [key: string]: unknown;
}

/** A tool call waiting for (or given) a person's approval, as `/api/approvals` lists it. */
export interface ApprovalView {
  id: string;
  agent_id: string;
  agent: string;
  tool: string;
  input: unknown;
  status: 'pending' | 'approved' | 'denied' | 'expired';
  requested_at: string;
  expires_at: string;
  decided_at: string | null;
  decided_by: string | null;
  reason: string | null;
}

/** A package trigger (spec/04). */
export type PackageTrigger = { type: 'schedule'; cron: string } | { type: 'heartbeat'; interval: string; window?: string } | { type: 'event'; sources: string[] } | { type: 'manual' };

/** A binding as `/api/packages` shows it. */
export interface BindingView {
  name: string;
  description: string;
  trigger: PackageTrigger;
  next_fire_at: string | null;
  emit: string | null;
  sources: string[];
  cost_estimate: string;
  total_per_run: number;
  running: boolean;
}

/** An installed package. */
export interface PackageView {
  slug: string;
  qualified_name: string | null;
  version: string;
  agent: string;
  agent_id: string;
  source: string;
  installed_at: string;
  active: boolean;
  settings: string[];
  pricing: { model?: string; cost?: number };
  skills: string[];
  bindings: BindingView[];
}

/** A run of a binding, with each activity. */
export interface PackageRunView {
  id: string;
  package: string;
  binding: string;
  trigger: string;
  status: string;
  emitted: string | null;
  error: string | null;
  started_at: string;
  ended_at: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  activities: { id: string; status: string; attempts: number; input_tokens: number; output_tokens: number; cost_usd: number; error: string | null }[];
}
