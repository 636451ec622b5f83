import { z } from 'zod';
import type {
  A2aPushConfigRecord,
  ActivityRunRecord,
  AgentRecord,
  ApprovalRecord,
  ChannelMessageRecord,
  ChannelMessageStatus,
  ChannelPairingRecord,
  EventRecord,
  ForgedToolRecord,
  ForgedToolStatus,
  ForgedToolTier,
  InstalledPackageRecord,
  PackageRunRecord,
  ScheduleRunRecord,
  TaskRecord,
  TurnJournalRecord,
  TurnStepRecord,
  UsageBucket,
  UsageRecord,
  UsageTotals,
  WorkflowRecord,
  WorkflowState,
} from '../contracts/index.ts';
import { flag, jsonObjectText, jsonText } from './rows.ts';

/*
 * The rows of every table as both stores read them back: the same columns, names and types in
 * SQLite and PostgreSQL (JSON as text, times as whole milliseconds), mapped to the contract's
 * records in one place. Each `…Columns` is the select list the schema beside it reads.
 */

export const agentColumns = 'id, name, state, parent_id, session_id, manifest, created_at, updated_at';

/** A row of `agents`. */
export const agentRow = z
  .object({
    id: z.string(),
    name: z.string(),
    state: z.enum(['running', 'suspended']),
    parent_id: z.string().nullable(),
    session_id: z.string(),
    manifest: jsonObjectText,
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform(
    (row): AgentRecord => ({
      id: row.id,
      name: row.name,
      state: row.state,
      parentId: row.parent_id,
      sessionId: row.session_id,
      manifest: row.manifest,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }),
  );

export const sessionColumns = 'id, agent_id, created_at, updated_at, conversation';

/** A row of `sessions` (its messages are rows of `session_messages`). */
export const sessionRow = z.object({
  id: z.string(),
  agent_id: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
  conversation: z.string().nullable(),
});

/** A row of `session_messages`. */
export const sessionMessageRow = z.object({ message: jsonText });

/** The cached input tokens of a usage row or sum, as the store gives them: only when there were any. */
function cachedTokens(row: { cache_read_tokens: number; cache_write_tokens: number }): { cacheReadTokens?: number; cacheWriteTokens?: number } {
  return { ...(row.cache_read_tokens > 0 ? { cacheReadTokens: row.cache_read_tokens } : {}), ...(row.cache_write_tokens > 0 ? { cacheWriteTokens: row.cache_write_tokens } : {}) };
}

/** A row of `usage`. */
export const usageRow = z
  .object({
    agent_id: z.string(),
    at: z.number(),
    model: z.string(),
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_read_tokens: z.number(),
    cache_write_tokens: z.number(),
    cost_usd: z.number(),
  })
  .transform(
    (row): UsageRecord => ({
      agentId: row.agent_id,
      at: row.at,
      model: row.model,
      inputTokens: row.input_tokens,
      outputTokens: row.output_tokens,
      ...cachedTokens(row),
      costUsd: row.cost_usd,
    }),
  );

/** Usage totals: sums over `usage` (`input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`, `cost_usd`, `calls`). */
export const usageTotalsRow = z
  .object({ input_tokens: z.number(), output_tokens: z.number(), cache_read_tokens: z.number(), cache_write_tokens: z.number(), cost_usd: z.number(), calls: z.number() })
  .transform(
    (row): UsageTotals => ({
      inputTokens: row.input_tokens,
      outputTokens: row.output_tokens,
      ...cachedTokens(row),
      costUsd: row.cost_usd,
      calls: row.calls,
    }),
  );

/** One bucket of `usage.series`: its start, agent and model, and the sums. */
export const usageBucketRow = z
  .object({ start: z.number(), agent_id: z.string(), model: z.string(), input_tokens: z.number(), output_tokens: z.number(), cache_read_tokens: z.number(), cache_write_tokens: z.number(), cost_usd: z.number(), calls: z.number() })
  .transform(
    (row): UsageBucket => ({
      start: row.start,
      agentId: row.agent_id,
      model: row.model,
      inputTokens: row.input_tokens,
      outputTokens: row.output_tokens,
      ...cachedTokens(row),
      costUsd: row.cost_usd,
      calls: row.calls,
    }),
  );

export const eventColumns = 'seq, at, type, agent_id, data';

/** A row of `events`. */
export const eventRow = z
  .object({
    seq: z.number(),
    at: z.number(),
    type: z.string(),
    agent_id: z.string().nullable(),
    data: jsonObjectText,
  })
  .transform((row): EventRecord => ({ seq: row.seq, at: row.at, type: row.type, agentId: row.agent_id, data: row.data }));

export const approvalColumns = 'id, agent_id, agent_name, tool, input, status, requested_at, expires_at, decided_at, decided_by, reason, node_id';

/** An approval's values, in the order of {@link approvalColumns}. */
export function approvalValues(record: ApprovalRecord): (string | number | null)[] {
  const { id, agentId, agentName, tool, input, status, requestedAt, expiresAt, decidedAt, decidedBy, reason, nodeId } = record;
  return [id, agentId, agentName, tool, JSON.stringify(input), status, requestedAt, expiresAt, decidedAt, decidedBy, reason, nodeId];
}

/** A row of `approvals`. */
export const approvalRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    agent_name: z.string(),
    tool: z.string(),
    input: jsonText,
    status: z.enum(['pending', 'approved', 'denied', 'expired']),
    requested_at: z.number(),
    expires_at: z.number(),
    decided_at: z.number().nullable(),
    decided_by: z.string().nullable(),
    reason: z.string().nullable(),
    node_id: z.string().nullable(),
  })
  .transform(
    (row): ApprovalRecord => ({
      id: row.id,
      agentId: row.agent_id,
      agentName: row.agent_name,
      tool: row.tool,
      input: row.input,
      status: row.status,
      requestedAt: row.requested_at,
      expiresAt: row.expires_at,
      decidedAt: row.decided_at,
      decidedBy: row.decided_by,
      reason: row.reason,
      nodeId: row.node_id,
    }),
  );

export const taskColumns = 'id, context_id, agent, state, finished, task, created_at, updated_at';

/** A row of `tasks` (A2A tasks). */
export const taskRow = z
  .object({
    id: z.string(),
    context_id: z.string(),
    agent: z.string(),
    state: z.string(),
    finished: flag,
    task: jsonText,
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform(
    (row): TaskRecord => ({
      id: row.id,
      contextId: row.context_id,
      agent: row.agent,
      state: row.state,
      finished: row.finished,
      task: row.task,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }),
  );

export const a2aPushConfigColumns = 'task_id, id, url, token, auth_scheme, auth_credentials, wire_version, created_by, created_at';

/** A row of `a2a_push_configs`. */
export const a2aPushConfigRow = z
  .object({
    task_id: z.string(),
    id: z.string(),
    url: z.string(),
    token: z.string().nullable(),
    auth_scheme: z.string().nullable(),
    auth_credentials: z.string().nullable(),
    wire_version: z.string(),
    created_by: z.string(),
    created_at: z.number(),
  })
  .transform(
    (row): A2aPushConfigRecord => ({
      taskId: row.task_id,
      id: row.id,
      url: row.url,
      token: row.token,
      authentication: row.auth_scheme === null ? null : { scheme: row.auth_scheme, credentials: row.auth_credentials ?? '' },
      wireVersion: row.wire_version,
      createdBy: row.created_by,
      createdAt: row.created_at,
    }),
  );

const activityRecord = z.object({
  id: z.string(),
  status: z.enum(['pending', 'running', 'completed', 'failed', 'skipped']),
  attempts: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number(),
  output: z.string().nullable(),
  error: z.string().nullable(),
  fallback: z.string().nullable(),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
}) satisfies z.ZodType<ActivityRunRecord>;

export const packageRunColumns = 'id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at, node_id, check_hash';

/** A row of `package_runs`: one run, its activities as JSON. */
export const packageRunRow = z
  .object({
    id: z.string(),
    package: z.string(),
    binding: z.string(),
    trigger: z.string(),
    status: z.enum(['running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed', 'unchanged']),
    inputs: jsonObjectText,
    activities: jsonText.pipe(z.array(activityRecord)),
    emitted: z.string().nullable(),
    error: z.string().nullable(),
    started_at: z.number(),
    ended_at: z.number().nullable(),
    node_id: z.string().nullable(),
    check_hash: z.string().nullable(),
  })
  .transform(
    (row): PackageRunRecord => ({
      id: row.id,
      package: row.package,
      binding: row.binding,
      trigger: row.trigger,
      status: row.status,
      inputs: row.inputs,
      activities: row.activities,
      emitted: row.emitted,
      error: row.error,
      startedAt: row.started_at,
      endedAt: row.ended_at,
      nodeId: row.node_id,
      ...(row.check_hash === null ? {} : { checkHash: row.check_hash }),
    }),
  );

/** The values of a package run's columns after `id`, in `packageRunColumns` order. */
export function packageRunValues(record: PackageRunRecord): [string, string, string, string, string, string, string | null, string | null, number, number | null, string | null, string | null] {
  return [
    record.package,
    record.binding,
    record.trigger,
    record.status,
    JSON.stringify(record.inputs),
    JSON.stringify(record.activities),
    record.emitted,
    record.error,
    record.startedAt,
    record.endedAt,
    record.nodeId,
    record.checkHash ?? null,
  ];
}

/** A package run whose process is gone: `interrupted`, and its running activity `failed`, at `at` with `error`. */
export function interruptedRun(run: PackageRunRecord, at: number, error: string): PackageRunRecord {
  return {
    ...run,
    status: 'interrupted',
    error,
    endedAt: at,
    activities: run.activities.map((activity) => (activity.status === 'running' ? { ...activity, status: 'failed', error, endedAt: at } : activity)),
  };
}

export const scheduleRunColumns = 'id, agent_id, trigger, due_at, started_at, finished_at, outcome, reason, caught_up, count, check_hash';

/** A row of `schedule_runs`: one due wake-up of an agent. */
export const scheduleRunRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    trigger: z.string(),
    due_at: z.number(),
    started_at: z.number().nullable(),
    finished_at: z.number().nullable(),
    outcome: z.enum(['running', 'completed', 'unchanged', 'failed', 'skipped', 'interrupted']),
    reason: z.string().nullable(),
    caught_up: flag,
    count: z.number(),
    check_hash: z.string().nullable(),
  })
  .transform(
    (row): ScheduleRunRecord => ({
      id: row.id,
      agentId: row.agent_id,
      trigger: row.trigger,
      dueAt: row.due_at,
      startedAt: row.started_at,
      finishedAt: row.finished_at,
      outcome: row.outcome,
      reason: row.reason,
      caughtUp: row.caught_up,
      count: row.count,
      checkHash: row.check_hash,
    }),
  );

/** The values of a schedule run's columns after `id`, in `scheduleRunColumns` order, its flag as `caughtUp` gives it (a store turns it into its own type). */
export function scheduleRunValues(record: ScheduleRunRecord): [string, string, number, number | null, number | null, string, string | null, boolean, number, string | null] {
  return [record.agentId, record.trigger, record.dueAt, record.startedAt, record.finishedAt, record.outcome, record.reason, record.caughtUp, record.count, record.checkHash];
}

export const installedPackageColumns = 'slug, qualified_name, version, agent_id, source, persona, agent_json, loom_toml, settings, skills, installed_at, last_fires';

/** A row of `installed_packages`: one package, its documents as JSON. */
export const installedPackageRow = z
  .object({
    slug: z.string(),
    qualified_name: z.string().nullable(),
    version: z.string(),
    agent_id: z.string(),
    source: z.string(),
    persona: z.string(),
    agent_json: jsonObjectText,
    loom_toml: jsonObjectText,
    settings: jsonText.pipe(z.array(z.string())),
    skills: jsonText.pipe(z.record(z.string(), z.object({ prompt: z.string(), requires: z.array(z.string()) }))),
    installed_at: z.number(),
    last_fires: jsonText.pipe(z.record(z.string(), z.number())),
  })
  .transform(
    (row): InstalledPackageRecord => ({
      slug: row.slug,
      qualifiedName: row.qualified_name,
      version: row.version,
      agentId: row.agent_id,
      source: row.source,
      persona: row.persona,
      agentJson: row.agent_json,
      loomToml: row.loom_toml,
      settings: row.settings,
      skills: row.skills,
      installedAt: row.installed_at,
      lastFires: row.last_fires,
    }),
  );

/** The values of an installed package's columns, in `installedPackageColumns` order. */
export function installedPackageValues(record: InstalledPackageRecord): (string | number | null)[] {
  return [
    record.slug,
    record.qualifiedName,
    record.version,
    record.agentId,
    record.source,
    record.persona,
    JSON.stringify(record.agentJson),
    JSON.stringify(record.loomToml),
    JSON.stringify(record.settings),
    JSON.stringify(record.skills),
    record.installedAt,
    JSON.stringify(record.lastFires),
  ];
}

const WORKFLOW_STATES = ['planning', 'awaiting_approval', 'executing', 'paused', 'completed', 'failed', 'stalled', 'cancelled'] as const satisfies readonly WorkflowState[];

const workflowTaskRecord = z.object({
  id: z.string(),
  title: z.string(),
  instruction: z.string(),
  agent: z.string(),
  dependsOn: z.array(z.string()),
  acceptance: z.string(),
  status: z.enum(['pending', 'in_progress', 'completed', 'failed', 'blocked', 'skipped']),
  attempts: z.number(),
  result: z.string().nullable(),
  feedback: z.string().nullable(),
});

export const workflowColumns = 'agent_id, state, data, created_at, updated_at';

/** A row of `workflows`: one workflow agent's plan, as JSON. */
export const workflowRow = z
  .object({
    agent_id: z.string(),
    state: z.enum(WORKFLOW_STATES),
    data: jsonText.pipe(z.object({ request: z.string(), summary: z.string(), tasks: z.array(workflowTaskRecord), replans: z.number(), note: z.string().nullable() })),
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): WorkflowRecord => ({ agentId: row.agent_id, state: row.state, ...row.data, createdAt: row.created_at, updatedAt: row.updated_at }));

/** The `data` column of a workflow: its plan. */
export function workflowData(record: WorkflowRecord): string {
  return JSON.stringify({ request: record.request, summary: record.summary, tasks: record.tasks, replans: record.replans, note: record.note });
}

const FORGED_TOOL_TIERS = ['session', 'agent', 'shared'] as const satisfies readonly ForgedToolTier[];
const FORGED_TOOL_STATUSES = ['active', 'demoted', 'retired'] as const satisfies readonly ForgedToolStatus[];

const forgedToolData = z.object({
  agentName: z.string(),
  sessionId: z.string().nullable(),
  statusReason: z.string().nullable(),
  mode: z.enum(['compose', 'sandbox']),
  request: z.record(z.string(), z.json()),
  codeHash: z.string().nullable(),
  sourcePersisted: z.boolean(),
  verdicts: z.array(z.record(z.string(), z.json())),
  origin: z.enum(['forged', 'imported']),
});

export const forgedToolColumns = 'id, name, agent_id, tier, status, data, calls, successes, total_ms, created_at, updated_at';

/** A row of `forged_tools`: its request and verdicts as JSON, its stats as columns. */
export const forgedToolRow = z
  .object({
    id: z.string(),
    name: z.string(),
    agent_id: z.string(),
    tier: z.enum(FORGED_TOOL_TIERS),
    status: z.enum(FORGED_TOOL_STATUSES),
    data: jsonObjectText.pipe(forgedToolData),
    calls: z.number(),
    successes: z.number(),
    total_ms: z.number(),
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform(
    (row): ForgedToolRecord => ({
      id: row.id,
      name: row.name,
      agentId: row.agent_id,
      tier: row.tier,
      status: row.status,
      ...row.data,
      request: row.data.request,
      verdicts: row.data.verdicts,
      stats: { calls: row.calls, successes: row.successes, totalMs: row.total_ms },
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }),
  );

/** The values of a forged tool's columns, in `forgedToolColumns` order. */
export function forgedToolValues(record: ForgedToolRecord): (string | number)[] {
  const data = {
    agentName: record.agentName,
    sessionId: record.sessionId,
    statusReason: record.statusReason,
    mode: record.mode,
    request: record.request,
    codeHash: record.codeHash,
    sourcePersisted: record.sourcePersisted,
    verdicts: record.verdicts,
    origin: record.origin,
  };
  const { stats } = record;
  return [record.id, record.name, record.agentId, record.tier, record.status, JSON.stringify(data), stats.calls, stats.successes, stats.totalMs, record.createdAt, record.updatedAt];
}

const CHANNEL_MESSAGE_STATUSES = ['received', 'answered', 'refused', 'ignored', 'failed'] as const satisfies readonly ChannelMessageStatus[];

export const channelMessageColumns = 'channel, platform_id, user_id, user_name, conversation_id, conversation_kind, thread, mentioned, text, status, note, received_at, updated_at';

/** A row of `channel_messages`. */
export const channelMessageRow = z
  .object({
    channel: z.string(),
    platform_id: z.string(),
    user_id: z.string(),
    user_name: z.string().nullable(),
    conversation_id: z.string(),
    conversation_kind: z.enum(['direct', 'group']),
    thread: z.string().nullable(),
    mentioned: flag,
    text: z.string(),
    status: z.enum(CHANNEL_MESSAGE_STATUSES),
    note: z.string().nullable(),
    received_at: z.number(),
    updated_at: z.number(),
  })
  .transform(
    (row): ChannelMessageRecord => ({
      channel: row.channel,
      platformId: row.platform_id,
      userId: row.user_id,
      userName: row.user_name,
      conversationId: row.conversation_id,
      conversationKind: row.conversation_kind,
      thread: row.thread,
      mentioned: row.mentioned,
      text: row.text,
      status: row.status,
      note: row.note,
      receivedAt: row.received_at,
      updatedAt: row.updated_at,
    }),
  );

export const channelPairingColumns = 'code, channel, user_id, user_name, created_at, approved_at';

/** A row of `channel_pairings`. */
export const channelPairingRow = z
  .object({ code: z.string(), channel: z.string(), user_id: z.string(), user_name: z.string().nullable(), created_at: z.number(), approved_at: z.number().nullable() })
  .transform((row): ChannelPairingRecord => ({ code: row.code, channel: row.channel, userId: row.user_id, userName: row.user_name, createdAt: row.created_at, approvedAt: row.approved_at }));

export const turnJournalColumns = 'id, agent_id, session_id, conversation, request, idempotency_key, received_at, state, outcome';

/** A row of `turn_journal` (its steps are rows of `turn_steps`). */
export const turnJournalRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    session_id: z.string(),
    conversation: z.string().nullable(),
    request: jsonObjectText,
    idempotency_key: z.string().nullable(),
    received_at: z.number(),
    state: z.enum(['running', 'done']),
    outcome: jsonObjectText.nullable(),
  })
  .transform((row): Omit<TurnJournalRecord, 'steps'> => ({
    id: row.id,
    agentId: row.agent_id,
    sessionId: row.session_id,
    conversation: row.conversation,
    request: row.request,
    idempotencyKey: row.idempotency_key,
    receivedAt: row.received_at,
    state: row.state,
    outcome: row.outcome,
  }));

export const turnStepColumns = 'turn_id, seq, kind, at, data';

/** A row of `turn_steps`. */
export const turnStepRow = z
  .object({ turn_id: z.string(), seq: z.number(), kind: z.enum(['model', 'tool-start', 'tool-result', 'approval', 'stream']), at: z.number(), data: jsonObjectText })
  .transform((row): TurnStepRecord & { turnId: string } => ({ turnId: row.turn_id, kind: row.kind, at: row.at, data: row.data }));
