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
  /** `provider/model` its [model] names; null on the daemon's default model. */
  model: string | null;
  /** Its primary model: its own, else the daemon's default; null when neither. */
  runs_on: string | null;
  /**
   * Why it cannot run, seen without the network (decision 0041): no model at all, or its model's
   * key is not set; null when nothing local stands in its way. Absent from a daemon older than it.
   */
  cannot_run?: CannotRunView | null;
  tags: string[];
  capabilities: Capability[];
  created_at: string;
  updated_at: string;
}

/** Why an agent cannot run, with the fix (`cannot_run` of the agent view). */
export interface CannotRunView {
  kind: 'no-model' | 'missing-key';
  /** `provider/model` it would run on; null when it has none. */
  model: string | null;
  reason: string;
  fix: string;
}

export interface AgentDetailView extends AgentView {
  manifest: Record<string, unknown>;
  /** What its manifest's `skills` offer it of the installed skills (mirrors src/kernel/agent-view.ts `AgentSkillsView`). */
  skills?: {
    skills: { skill: string; name: string; description: string; in_prompt: boolean }[];
    problems: string[];
    budget_bytes: number;
  };
}

/** A scheduled wake-up of an agent, run or skipped (mirrors src/kernel/schedule-run-view.ts). */
export interface ScheduleRunView {
  id: string;
  /** `continuous`, `cron`, `manual` (forced now), or a proactive trigger's event. */
  trigger: string;
  due_at: string;
  started_at: string | null;
  finished_at: string | null;
  outcome: 'running' | 'completed' | 'unchanged' | 'failed' | 'skipped' | 'interrupted';
  /** Why it was skipped, interrupted or failed. */
  reason: string | null;
  /** Due while the daemon was down, and run late. */
  caught_up: boolean;
  /** How many due instants it stands for (missed ones skipped together). */
  count: number;
}

/** `GET /api/usage/today`, the fields the agent page reads: the spend since the daemon's midnight in its time zone (`[scheduler].timezone`). */
export interface UsageToday {
  timezone: string;
  tokens: number;
  cost_usd: number;
}

export interface UsageRow {
  agent_id: string;
  agent: string | null;
  model: string;
  calls: number;
  /** Every input token, those read from or written to the prompt cache included. */
  input_tokens: number;
  output_tokens: number;
  /** Of `input_tokens`, those read from the prompt cache. */
  cache_read_tokens: number;
  /** Of `input_tokens`, those written to the prompt cache. */
  cache_write_tokens: number;
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

/** An agent event as `POST …/messages` streams it (a finished run carries the turn view, a tool result how long the tool ran where known). */
export type AgentEvent =
  | { type: 'run-start'; runId: string; agentId: string; agentName: string }
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; text: string; isError: boolean; durationMs?: number }
  | { type: 'approval-request'; approvalId: string; toolCallId: string; toolName: string; input: unknown; expiresAt: string; reason?: string }
  | { type: 'phase'; phase: string; detail: string }
  | { type: 'run-finish'; result: TurnView }
  | { type: 'error'; code: string; category: string; message: string }
  // `GET …/turn` after a restart, to a client that had seen events the daemon had not saved: what follows is the turn from its start.
  | { type: 'rewind'; reason: string };

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
  /** Stored and shown only; Loom charges nothing. */
  pricing: { model?: string; cost?: number };
  skills: string[];
  bindings: BindingView[];
}

/** One activity of a package run. */
export interface ActivityRunView {
  id: string;
  status: string;
  attempts: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  output: string | null;
  error: string | null;
  /** The `on_error` fallback that applied when it failed (`NotifyOwner`, `Skip`, `Abort`). */
  fallback: string | null;
  started_at: string | null;
  ended_at: string | null;
}

/** The states of a package run; `skipped` and `missed` runs never started, and say why in `error`. */
export type PackageRunStatus = 'running' | 'completed' | 'aborted' | 'interrupted' | 'skipped' | 'missed' | 'unchanged' | (string & {});

/** A run of a binding, with each activity, as `/api/packages/runs` lists it (newest first). */
export interface PackageRunView {
  id: string;
  package: string;
  binding: string;
  trigger: string;
  status: PackageRunStatus;
  inputs: Record<string, unknown>;
  emitted: string | null;
  /** Why it was aborted, skipped or missed. */
  error: string | null;
  started_at: string;
  ended_at: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  activities: ActivityRunView[];
}

/** The kernel events the package runtime and installer publish on `/api/events` (mirrors src/kernel/event-bus.ts). */
export const PACKAGE_EVENT_TYPES = [
  'package-fire',
  'package-activity-start',
  'package-activity-finish',
  'package-notify',
  'package-emit',
  'package-run-finish',
  'package-skip',
  'package-miss',
  'package-install',
] as const;

/** The type of a package event. */
export type PackageEventType = (typeof PACKAGE_EVENT_TYPES)[number];

/** Whether a kernel event comes from the package runtime (its `name` is then the package slug). */
export function isPackageEvent(event: KernelEvent): boolean {
  return (PACKAGE_EVENT_TYPES as readonly string[]).includes(event.type);
}

/** A `package-notify` row of `/api/audit`: an activity failed and its fallback is `NotifyOwner`. */
export interface PackageNotifyRecord {
  seq: number;
  at: number;
  type: 'package-notify';
  agentId: string | null;
  data: { name?: string; binding?: string; runId?: string; activity?: string; error?: string };
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
  request: {
    inputSchema?: unknown;
    outputSchema?: unknown;
    implementation?: { mode: string; steps?: { name: string; tool: string; inputMapping?: unknown }[]; code?: string; allowlist?: string[] };
  };
  createdAt: number;
  updatedAt: number;
}

/** What promoting a forged tool did. */
export interface PromotionView {
  tool: ForgedToolView;
  outcome: 'promoted' | 'refused' | 'pending-approval';
  reason: string | null;
  approvalId?: string;
}

/** A channel, as `/api/channels` shows it. */
export interface ChannelView {
  name: string;
  kind: string;
  agent: string;
  state: 'starting' | 'connected' | 'reconnecting' | 'stopped' | 'failed' | 'standby';
  error: string | null;
  lastMessageAt: string | null;
  policy: { direct: string; groups: string; require_mention: boolean; messages_per_minute: number; approvers: string[] };
  pendingPairings: { code: string; userId: string; userName: string | null; requestedAt: string }[];
}

/** A row of `/api/audit`: a kernel event, a turn, a tool call or a refusal, as the audit log holds it. */
export interface AuditRecord {
  seq: number;
  at: number;
  type: string;
  agentId: string | null;
  data: Record<string, unknown>;
}

/** The kinds `/api/audit?kind=` filters on, with the event types each covers (mirrors src/kernel/audit-kinds.ts; test/web/audit-kinds-mirror.test.ts fails when they differ). */
export const AUDIT_KINDS = {
  turn: ['turn-finish', 'turn-refuse', 'turn-cancel', 'turn-error', 'model-error'],
  tool: ['tool-finish', 'tool-failed', 'tool-denied', 'tool-invalid', 'tool-blocked', 'tool-timeout', 'tool-sandbox-fault'],
  refusal: ['turn-refuse', 'tool-denied', 'tool-invalid', 'tool-blocked', 'channel-refused'],
  approval: ['approval-request', 'approval-decide'],
  taint: ['tool-tainted'],
  'model-error': ['model-error'],
  agent: ['agent-spawn', 'agent-suspend', 'agent-resume', 'agent-update', 'agent-kill'],
  forge: ['tool-forge', 'tool-promote', 'tool-demote', 'tool-retire', 'tool-sandbox-fault'],
  package: PACKAGE_EVENT_TYPES,
  channel: ['channel-refused', 'channel-paired', 'channel-reply-failed'],
  schedule: ['schedule-run-finish'],
  reasoning: ['cot-trace', 'workflow-state', 'workflow-task', 'code-module-fault'],
} as const;

export type AuditKind = keyof typeof AUDIT_KINDS;

/** The outcomes `/api/audit?outcome=` filters on (mirrors src/kernel/audit-kinds.ts). */
export const AUDIT_OUTCOMES = {
  ok: ['turn-finish', 'tool-finish'],
  refused: AUDIT_KINDS.refusal,
  failed: ['turn-error', 'model-error', 'tool-failed', 'tool-timeout', 'tool-sandbox-fault', 'code-module-fault', 'package-notify', 'channel-reply-failed'],
  cancelled: ['turn-cancel'],
} as const;

export type AuditOutcome = keyof typeof AUDIT_OUTCOMES;

/** One bucket of `/api/usage/series`: usage of one agent with one model from `start` for `step_ms`. */
export interface UsageBucketView extends UsageRow {
  start: number;
}

/** `/api/usage/series`: the buckets of a range on the daemon's clock. */
export interface UsageSeriesView {
  since: number;
  until: number;
  step_ms: number;
  buckets: UsageBucketView[];
}

/** One thing wrong with a manifest, at its line (`POST /api/manifests/validate`). */
export interface ManifestIssue {
  message: string;
  field: string;
  line?: number;
  column?: number;
}

/** The answer of `POST /api/manifests/validate`: every error at its line, and the warnings a spawn would give. */
export interface ManifestValidation {
  valid: boolean;
  format: 'toml' | 'json';
  errors: ManifestIssue[];
  warnings: string[];
}

/** An MCP server Loom is a client of, as `/api/mcp/servers` shows it (`configured`). */
export interface McpServerView {
  name: string;
  transport: 'stdio' | 'sse' | 'http';
  status: 'connecting' | 'connected' | 'failed' | 'not started';
  error?: string;
  tools: { name: string; description: string }[];
  /** Tools left out of agents' tools, with why (a schema Loom refuses). */
  refused_tools?: { name: string; reason: string }[];
  /** `modern`: the 2026-07-28 revision and later; `legacy`: a 2025 revision. */
  era?: 'modern' | 'legacy';
  protocol_version?: string;
  era_reason?: string;
  action?: { kind: 'login'; command: string; reason: string };
}
