import type { JsonObject, JsonValue } from './json.ts';

/** The states an agent can be stored in. A terminated agent is deleted, never stored. */
export type AgentState = 'running' | 'suspended';

/**
 * An agent as the store holds it. The manifest is the normalised manifest, as JSON. Times
 * throughout the store are whole milliseconds since the epoch; counts and limits are whole numbers.
 */
export interface AgentRecord {
  id: string;
  name: string;
  state: AgentState;
  parentId: string | null;
  /** The agent's main session, created with it. */
  sessionId: string;
  manifest: JsonObject;
  createdAt: number;
  updatedAt: number;
}

/** A conversation. `messages` is opaque to the store; the runtime gives it a shape. */
export interface SessionRecord {
  id: string;
  agentId: string;
  messages: JsonValue[];
  createdAt: number;
  updatedAt: number;
  /**
   * The conversation the session holds, named by who holds it and through which door
   * (`principal:<key>`, `principal:<key>/a2a:<context id>`, a channel's thread): null, or absent
   * when written, for the agent's main session, which is its owner's. Read back, always given.
   */
  conversation?: string | null;
}

/**
 * A turn accepted on an agent's session and not yet committed, as its journal holds it (decision
 * 0045): what it was asked, and each step it has taken so far. A turn that was running when its
 * daemon stopped is resumed from it at the next start.
 */
export interface TurnJournalRecord {
  /** The turn's id (its run id). */
  id: string;
  agentId: string;
  sessionId: string;
  /** The session's conversation; null for the agent's main session. */
  conversation: string | null;
  /** What the turn needs to run again: the message, who sent it, and where (opaque to the store). */
  request: JsonObject;
  /** The key its caller gave (an `Idempotency-Key`), unique per agent; null without one. */
  idempotencyKey: string | null;
  /** When the message was accepted. */
  receivedAt: number;
  /** `running` until the turn's commit; a turn given a key is kept `done`, with its outcome, for the caller's retries. */
  state: 'running' | 'done';
  /** How a `done` turn ended (its reply), for a retry with its key; null while it runs. */
  outcome: JsonObject | null;
  /** Its steps so far, in order (none once it is done). */
  steps: TurnStepRecord[];
}

/**
 * One step of a turn as its journal keeps it: a model reply, a tool call's start, a tool call's
 * result, the approval request a call waits for (`approval`), or the events its stream showed
 * since the last commit (`stream`, committed with the step after them, so that a client
 * reconnecting after a restart gets them again: decision 0059). `data` is opaque to the store.
 */
export interface TurnStepRecord {
  kind: 'model' | 'tool-start' | 'tool-result' | 'approval' | 'stream';
  at: number;
  data: JsonObject;
}

/** A turn as the journal holds it, without its steps (see `TurnJournalRepository.runningOn`). */
export type TurnJournalHead = Omit<TurnJournalRecord, 'steps'>;

/** A step of a turn with its number in the turn (a turn's steps are numbered from 0 as they are recorded). */
export interface NumberedTurnStep extends TurnStepRecord {
  seq: number;
}

/** A turn as it is first recorded: running, with no steps. */
export type TurnJournalOpen = Omit<TurnJournalRecord, 'state' | 'outcome' | 'steps'>;

/** How a turn's commit closes its journal (see `SessionRepository.save`). */
export interface TurnJournalClose {
  turnId: string;
  /** How it ended, kept for a retry when the turn has an idempotency key. */
  outcome: JsonObject;
}

/**
 * The journal of turns under way (decision 0045). Each write is one commit; the turn's last one
 * is its session's commit (`SessionRepository.save` with `closeTurn`).
 */
export interface TurnJournalRepository {
  /**
   * Records a turn just accepted, as `running` with no steps.
   * @throws {StoreConflictError} when its agent already has a turn with its idempotency key.
   * @throws {StoreNotFoundError} when its agent does not exist.
   */
  open(record: TurnJournalOpen): Promise<void>;
  /**
   * Appends `steps` to a running turn, with `events` (audit records) in the same transaction;
   * with `open`, records the turn first, in the same transaction (a turn is recorded with its
   * first step, see decision 0045).
   * @throws {StoreNotFoundError} when there is no such running turn (and no `open`).
   */
  step(turnId: string, steps: readonly TurnStepRecord[], options?: { events?: readonly Omit<EventRecord, 'seq'>[]; open?: TurnJournalOpen }): Promise<void>;
  get(turnId: string): Promise<TurnJournalRecord | undefined>;
  /** The agent's turn with that idempotency key, running or done. */
  byKey(agentId: string, idempotencyKey: string): Promise<TurnJournalRecord | undefined>;
  /** Every running turn, with its steps, oldest first. */
  running(): Promise<TurnJournalRecord[]>;
  /**
   * The oldest running turn (by when it was received, then recorded) on the session of that
   * conversation of the agent (null: its main session), without its steps, with the node that holds
   * its lease (on PostgreSQL, decision 0061; null when none does); undefined when it has none.
   */
  runningOn(agentId: string, conversation: string | null): Promise<(TurnJournalHead & { nodeId: string | null }) | undefined>;
  /**
   * Turn `turnId` without its steps, and those numbered `from` or after (of kind `kind` only, when
   * given), each with its number: what a reader that had read its steps up to `from` reads again.
   * Undefined when the journal has no such turn.
   */
  stepsSince(turnId: string, from: number, kind?: TurnStepRecord['kind']): Promise<{ turn: TurnJournalHead; steps: NumberedTurnStep[] } | undefined>;
  /**
   * Closes a turn that ended without a session commit (refused when it left the queue, or its
   * agent can no longer run it), as a session commit's `closeTurn` would.
   */
  finish(close: TurnJournalClose, at: number): Promise<void>;
  /** Forgets `done` turns finished before `before` (their keys may be reused); returns how many. */
  prune(before: number): Promise<number>;
}

/** One key of an agent's memory. */
export interface MemoryRecord {
  agentId: string;
  key: string;
  value: JsonValue;
  updatedAt: number;
}

/** Tokens and money spent by one model call. Kept after its agent is killed, for accounting. */
export interface UsageRecord {
  agentId: string;
  at: number;
  model: string;
  /** Every input token, those read from or written to the provider's prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache; none when absent (as read back when there were none). */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache; none when absent. */
  cacheWriteTokens?: number;
  costUsd: number;
  /**
   * The agents above the one that made the call, from the root down, each id followed by `/`
   * (`<root id>/<parent id>/`); absent for an agent no agent spawned. Kept with the record after
   * they are killed, so an ancestor's lifetime cap (`[capabilities].econ_spend`) still counts it.
   */
  lineage?: string;
}

/** Totals over a set of usage records. */
export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those read from the provider's prompt cache; absent when none were. */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the provider's prompt cache; absent when none were. */
  cacheWriteTokens?: number;
  costUsd: number;
  calls: number;
}

/** Usage of one agent with one model in one time bucket, as `UsageRepository.series` adds it up. */
export interface UsageBucket extends UsageTotals {
  /** The bucket's start: `since + n * stepMs`. */
  start: number;
  agentId: string;
  model: string;
}

/** A kernel event as the audit log holds it. `seq` orders events and is assigned by the store. */
export interface EventRecord {
  seq: number;
  at: number;
  type: string;
  agentId: string | null;
  data: JsonObject;
}

/** What became of a request for a human's approval. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

/** A tool call waiting for (or given) a human's approval. */
export interface ApprovalRecord {
  id: string;
  agentId: string;
  agentName: string;
  tool: string;
  input: JsonValue;
  status: ApprovalStatus;
  requestedAt: number;
  /** When it is denied if nobody decides. */
  expiresAt: number;
  decidedAt: number | null;
  /**
   * Who decided: a key's name or `local`; for an `expired` request, why it closed: `timeout`
   * (nobody decided in time), `cancel` (its turn was cancelled) or `restart` (the process that
   * asked is gone). `reason` says it in words.
   */
  decidedBy: string | null;
  reason: string | null;
  /**
   * The node whose turn waits for it (the daemon's node id, drawn at each start; see
   * docs/cluster.md): another node sharing the store records a decision for it and that node hears
   * it. Null for requests stored before nodes were recorded.
   */
  nodeId: string | null;
}

/** Agents, with the first session each is spawned with. */
export interface AgentRepository {
  /**
   * Stores a new agent together with its first session (which must be the agent's own), in
   * one transaction.
   * @throws {StoreConflictError} when the id or the name is already taken.
   * @throws {StoreNotFoundError} when `parentId` names no stored agent.
   */
  create(agent: AgentRecord, session: SessionRecord): Promise<void>;
  /** Every stored agent, oldest first. */
  list(): Promise<AgentRecord[]>;
  get(id: string): Promise<AgentRecord | undefined>;
  /** @throws {StoreNotFoundError} when no agent has this id. */
  setState(id: string, state: AgentState, at: number): Promise<void>;
  /**
   * Replaces an agent's manifest; its session, memory and id stay.
   * @throws {StoreNotFoundError} when no agent has this id.
   */
  updateManifest(id: string, manifest: JsonObject, at: number): Promise<void>;
  /**
   * Deletes agents, in one transaction, with their sessions and memory. Unknown ids are
   * ignored. Usage and events are kept.
   */
  delete(ids: readonly string[]): Promise<void>;
}

/** What commits with a session's messages (see `SessionRepository.save`). */
export interface SessionWriteOptions {
  usage?: readonly UsageRecord[];
  events?: readonly Omit<EventRecord, 'seq'>[];
  /**
   * The turn whose commit this is: its journal is closed in the same transaction (its steps
   * dropped; the turn forgotten, or kept `done` with its outcome when it has an idempotency key).
   */
  closeTurn?: TurnJournalClose;
}

/** Sessions (conversation histories). */
export interface SessionRepository {
  get(id: string): Promise<SessionRecord | undefined>;
  /** An agent's sessions, oldest first. */
  listByAgent(agentId: string): Promise<SessionRecord[]>;
  /**
   * Creates a session, or replaces every field of an existing one (`createdAt` included), and
   * returns its new revision: 1 when created, one more on each save after. With
   * `expectedRevision`, saves only if the stored revision is still that one (0 for none).
   * `usage` and `events` (appended to the event log) are recorded in the same transaction: a
   * turn's cost and its audit record commit with its messages.
   * @throws {StoreNotFoundError} when its agent does not exist.
   * @throws {StoreConflictError} when `expectedRevision` is given and no longer current.
   */
  save(session: SessionRecord, options?: SessionWriteOptions & { expectedRevision?: number }): Promise<number>;
  /**
   * Appends messages to a session's history (one more revision), without rewriting what it
   * holds; with `expectedRevision`, only if the stored revision is still that one. `usage` and
   * `events` are recorded in the same transaction.
   * @throws {StoreNotFoundError} when the session does not exist.
   * @throws {StoreConflictError} when `expectedRevision` is given and no longer current.
   */
  append(id: string, messages: readonly JsonValue[], options: SessionWriteOptions & { expectedRevision?: number; updatedAt: number }): Promise<number>;
  /**
   * The session's revision, without reading its messages; undefined when there is no such
   * session. A holder of a session's history compares it to know whether the history is current.
   */
  revision(id: string): Promise<number | undefined>;
  delete(id: string): Promise<void>;
}

/** Per-agent key-value memory. */
export interface MemoryRepository {
  /** @throws {StoreNotFoundError} when the agent does not exist. */
  put(record: MemoryRecord): Promise<void>;
  get(agentId: string, key: string): Promise<MemoryRecord | undefined>;
  /** An agent's keys that start with `prefix` (all when omitted), in code-point (binary) key order. */
  list(agentId: string, prefix?: string): Promise<MemoryRecord[]>;
  /** Returns whether the key existed. */
  delete(agentId: string, key: string): Promise<boolean>;
}

/** Model usage, for quotas and cost reports. */
export interface UsageRepository {
  record(usage: UsageRecord): Promise<void>;
  /**
   * Totals for records with `at >= since`; for one agent, or for all when `agentId` is omitted.
   * With `agentId`, `descendants` (the agent's own lineage followed by its id and `/`) counts the
   * records of its descendants too, killed ones included: those whose `lineage` begins with it.
   */
  totals(options: { since: number; agentId?: string; descendants?: string }): Promise<UsageTotals>;
  /**
   * The lifetime totals of agents' families, one per entry of `families`, in its order, read at
   * once: what `totals({ since: 0, agentId, descendants })` gives for each (its own records and its
   * descendants', killed ones included). On PostgreSQL the database keeps them as the usage is
   * written, one row per family read (its first read seeds it from the sum, once), so a read costs
   * the same however much a family has spent (a sum of its records grew with every call), and a
   * family never read (no cap) costs its usage's writes nothing; alone (SQLite) each is the sum.
   * @throws {StoreError} when a `descendants` does not end with `/`.
   */
  familyTotals(families: readonly { agentId: string; descendants: string }[]): Promise<UsageTotals[]>;
  /** Records with `at >= since` (all when omitted), oldest first. */
  list(options?: { since?: number; agentId?: string; limit?: number }): Promise<UsageRecord[]>;
  /**
   * Records with `since <= at < until` added up per bucket of `stepMs` (starting at `since`),
   * agent and model; for one agent or for all. Oldest bucket first; empty buckets are left out.
   * @throws {StoreError} when `stepMs` is not a positive integer.
   */
  series(options: { since: number; until: number; stepMs: number; agentId?: string }): Promise<UsageBucket[]>;
}

/** Which events `EventRepository.list` returns. */
export interface EventQuery {
  /** Only events with `seq > after`. */
  after?: number;
  /** Only events with `seq < before`: the cursor of a newest-first page. */
  before?: number;
  agentId?: string;
  /** Only events of this type. */
  type?: string;
  /** Only events of one of these types (with `type`, of both: of `type` if it is listed). */
  types?: readonly string[];
  /** `asc` (the default) lists from the oldest, `desc` from the newest. */
  order?: 'asc' | 'desc';
  limit?: number;
}

/** The append-only event and audit log. */
export interface EventRepository {
  /** Appends an event and returns its sequence number. */
  append(event: Omit<EventRecord, 'seq'>): Promise<number>;
  /**
   * Events matching the query, oldest first (newest first with `order: 'desc'`), at most `limit`.
   * A newest-first page continues with `before` set to the last `seq` it holds.
   */
  list(options?: EventQuery): Promise<EventRecord[]>;
}

/** Requests for human approval. Kept after their agent is killed, for the audit. */
export interface ApprovalRepository {
  create(record: ApprovalRecord): Promise<void>;
  get(id: string): Promise<ApprovalRecord | undefined>;
  /** Approvals with the status (all when omitted), oldest first. */
  list(options?: { status?: ApprovalStatus; limit?: number }): Promise<ApprovalRecord[]>;
  /**
   * Records a decision on a pending approval; returns false (changing nothing) when it was
   * already decided or does not exist.
   */
  decide(id: string, decision: { status: Exclude<ApprovalStatus, 'pending'>; at: number; by: string; reason: string | null }): Promise<boolean>;
  /**
   * Makes `nodeId` the node whose turn waits for a pending approval (a turn resumed there, taken
   * over from a node that died: decision 0061), so a decision on any node reaches it; returns
   * false (changing nothing) when it is not pending or does not exist.
   */
  adopt(id: string, nodeId: string | null): Promise<boolean>;
}

/** One stored A2A task: its A2A 1.0 JSON (`Task.toJSON`) and what the store queries by. */
export interface TaskRecord {
  id: string;
  contextId: string;
  /** The Loom agent serving the task. */
  agent: string;
  /** The A2A state name, e.g. `TASK_STATE_COMPLETED`. */
  state: string;
  /** Whether the state is terminal (completed, failed, canceled, rejected): only those are evicted. */
  finished: boolean;
  /** The task as A2A 1.0 JSON. */
  task: unknown;
  createdAt: number;
  updatedAt: number;
}

/** A query over stored tasks, newest first. */
export interface TaskQuery {
  /** Only the tasks of this agent. */
  agent?: string;
  contextId?: string;
  state?: string;
  /** Only tasks updated at or after this time (ms). */
  updatedAfter?: number;
  limit: number;
  offset: number;
}

/**
 * Where A2A tasks persist (a `tasks` table in the store; in memory for tests). The bounded
 * store on top of it decides what to evict.
 */
export interface TaskRepository {
  get(id: string): Promise<TaskRecord | undefined>;
  /** Inserts or replaces the task; a replaced task keeps its `createdAt`. */
  put(record: TaskRecord): Promise<void>;
  delete(id: string): Promise<void>;
  count(): Promise<number>;
  /** The id of the finished task created first, if any. */
  oldestFinished(): Promise<string | undefined>;
  list(query: TaskQuery): Promise<{ records: TaskRecord[]; total: number }>;
}

/** Authentication a webhook asked for: sent as `Authorization: <scheme> <credentials>`. */
export interface A2aPushAuthentication {
  scheme: string;
  credentials: string;
}

/**
 * A push-notification config of an A2A task (A2A's `TaskPushNotificationConfig`): where the
 * task's updates are POSTed, and what goes with them.
 */
export interface A2aPushConfigRecord {
  taskId: string;
  /** Unique within the task. */
  id: string;
  /** The client's webhook. */
  url: string;
  /** The token sent with every notification (`X-A2A-Notification-Token`); null when none was given. */
  token: string | null;
  authentication: A2aPushAuthentication | null;
  /** The A2A revision the config was set over (`1.0` or `0.3`): the shape its notifications take. */
  wireVersion: string;
  /** Who set it: an API key's name (`local` without keys) or the calling agent's id. */
  createdBy: string;
  createdAt: number;
}

/**
 * Push-notification configs of A2A tasks. A task's configs are deleted with the task (when it
 * is evicted from the bounded `tasks`).
 */
export interface A2aPushConfigRepository {
  /** Stores a config, or replaces the task's config with the same id (keeping its `createdAt`). */
  put(record: A2aPushConfigRecord): Promise<void>;
  get(taskId: string, id: string): Promise<A2aPushConfigRecord | undefined>;
  /** A task's configs, oldest first. */
  list(taskId: string): Promise<A2aPushConfigRecord[]>;
  /** Deletes one config of a task; whether there was one. */
  delete(taskId: string, id: string): Promise<boolean>;
}

/**
 * Where a package run stands. `skipped`: its trigger fired while the binding's previous run was
 * still going; `missed`: its trigger's instants passed while the daemon was down (one record
 * for all of them). Neither ran anything.
 */
export type PackageRunStatus = 'running' | 'completed' | 'aborted' | 'interrupted' | 'skipped' | 'missed' | 'unchanged';

/** Where one activity of a package run stands. */
export type ActivityRunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped';

/** One activity of a package run (spec/04): its status, attempts, tokens, cost, output, error. */
export interface ActivityRunRecord {
  /** The activity's `id`. */
  id: string;
  status: ActivityRunStatus;
  attempts: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  output: string | null;
  error: string | null;
  /** The `on_error.fallback` applied when it failed after its retries (`NotifyOwner`, `Skip`, `Abort`). */
  fallback: string | null;
  startedAt: number | null;
  endedAt: number | null;
}

/** One run of a package binding. */
export interface PackageRunRecord {
  id: string;
  /** The package slug. */
  package: string;
  binding: string;
  /** What fired it: `schedule`, `heartbeat`, `manual`, or `event:<namespaced event>`. */
  trigger: string;
  status: PackageRunStatus;
  inputs: JsonObject;
  activities: ActivityRunRecord[];
  /** The namespaced event emitted at the end, if any. */
  emitted: string | null;
  error: string | null;
  startedAt: number;
  endedAt: number | null;
  /**
   * The node that runs it (a daemon's node id, drawn at each start; see docs/cluster.md): while
   * that node lives, a run marked `running` is its own. Null for a run that never ran (skipped,
   * missed) and for runs recorded before nodes were.
   */
  nodeId: string | null;
  /**
   * The hash of what its heartbeat's `check` answered (decision 0062), kept by a run that
   * completed or was `unchanged` (its check found what the last one did, and no model was called);
   * null or absent otherwise.
   */
  checkHash?: string | null;
}

/**
 * What {@link PackageRunRepository.start} did: started the run, or left it unstarted because
 * another run of its binding is going (`going`, the newest such run).
 */
export type PackageRunStart = { started: true } | { started: false; going: PackageRunRecord };

/** Package runs (spec/04): every run of every binding, kept after it ends. */
export interface PackageRunRepository {
  /** Stores a run as it is (a fire that did not run, a run that goes on whatever else runs). */
  create(record: PackageRunRecord): Promise<void>;
  /**
   * Starts `record` (status `running`) as its binding's run unless another run of the binding is
   * going: a new run is stored, a run cut off (the same id, stored) is replaced by it. Looking and
   * writing are one step of the database (on PostgreSQL under a lock of the binding, held until
   * it commits), so of two nodes starting one binding at once one starts it. Another run is going
   * when it is `running` and recorded by a node alive now (`loom_nodes`, on the server's clock)
   * other than `record.nodeId`: a process's own runs are guarded in its memory, and a run of a
   * node gone is one its node's death cut off, which the leader resumes. On a database of one
   * daemon (SQLite) no other node lives, and every start goes ahead.
   */
  start(record: PackageRunRecord): Promise<PackageRunStart>;
  /**
   * Replaces the stored run with `record` (same id).
   * @throws {StoreNotFoundError} when there is none.
   */
  update(record: PackageRunRecord): Promise<void>;
  get(id: string): Promise<PackageRunRecord | undefined>;
  /** Runs newest first, optionally of one package (and binding), at most `limit` (default 100). */
  list(query?: { package?: string; binding?: string; limit?: number }): Promise<PackageRunRecord[]>;
  /**
   * Marks every run still `running` as `interrupted`, ended at `at` with `error`; an activity
   * that was `running` becomes `failed` with the same error (a finished one stays as it is, so a
   * resumed run does not repeat it). Returns the runs changed. Called at start: their process is gone.
   */
  interruptRunning(at: number, error: string): Promise<PackageRunRecord[]>;
  /** The check hash of the binding's latest run that kept one (see `PackageRunRecord.checkHash`), or undefined. */
  lastCheckHash(pkg: string, binding: string): Promise<string | undefined>;
}

/**
 * Where a scheduled wake-up of an agent stands (decision 0046). `running`: the agent is working on
 * it; `completed` or `failed`: its turn ended so; `unchanged`: its check found nothing new, and
 * no model was called (decision 0049); `skipped`: it did not run, and `reason` says why
 * (the previous run still going, a budget spent, missed while the daemon was down and not caught
 * up); `interrupted`: the daemon stopped while it ran.
 */
export type ScheduleRunOutcome = 'running' | 'completed' | 'unchanged' | 'failed' | 'skipped' | 'interrupted';

/** One due wake-up of an agent's `[schedule]` (or one forced with `loom agent run`), run or not. */
export interface ScheduleRunRecord {
  id: string;
  agentId: string;
  /** What made it due: `continuous`, `cron`, or `manual` (forced now). */
  trigger: string;
  /** The instant it was due (epoch ms); for a record of several missed instants, the first of them. */
  dueAt: number;
  /** When the agent began on it; null when it never ran. */
  startedAt: number | null;
  /** When it ended (or was recorded as skipped); null while it runs. */
  finishedAt: number | null;
  outcome: ScheduleRunOutcome;
  /** Why it was skipped, interrupted or failed; null otherwise. */
  reason: string | null;
  /** Whether it was due while the daemon was down, and run late by `[schedule].catch_up`. */
  caughtUp: boolean;
  /** How many due instants the record stands for: 1, or more for missed instants skipped together. */
  count: number;
  /** The hash of what the agent's `[schedule.check]` found before the run (decision 0049); null without a check. */
  checkHash: string | null;
}

/** Scheduled wake-ups of agents: every one due, run or skipped, kept with the agent (deleted when it is killed). */
export interface ScheduleRunRepository {
  create(record: ScheduleRunRecord): Promise<void>;
  /**
   * Replaces the stored run with `record` (same id).
   * @throws {StoreNotFoundError} when there is none.
   */
  update(record: ScheduleRunRecord): Promise<void>;
  /** The agent's runs, newest due first, at most `limit` (default 100). */
  list(agentId: string, query?: { limit?: number }): Promise<ScheduleRunRecord[]>;
  /** The latest instant a scheduled (not forced) wake-up of the agent was due, run or not; undefined before its first. */
  lastDue(agentId: string): Promise<number | undefined>;
  /** The check hash of the agent's latest run that recorded one (newest due first); undefined when none did. */
  lastCheckHash(agentId: string): Promise<string | undefined>;
  /**
   * Marks every run still `running` as `interrupted`, finished at `at` with `reason`; returns them.
   * Called at start: their process is gone. With `of`, only the runs of that wake-up (the agent's
   * instant `dueAt` of `trigger`): its node died, and another runs it again (decision 0061).
   */
  interruptRunning(at: number, reason: string, of?: { agentId: string; trigger: string; dueAt: number }): Promise<ScheduleRunRecord[]>;
}

/** A skill as an installed package keeps it: its text for the system prompt, and what it needs. */
export interface InstalledSkillText {
  /** The skill's own instructions, as the system prompt shows them. */
  prompt: string;
  /** The qualified names of the skills it depends on, transitively, dependencies first. */
  requires: string[];
}

/** A package installed in this daemon (spec/04): what it is, where from, and its agent. */
export interface InstalledPackageRecord {
  /** Its agent's name and its events' namespace. */
  slug: string;
  /** `@org/agents/name`, when known. */
  qualifiedName: string | null;
  version: string;
  /** The id of the agent the install spawned. */
  agentId: string;
  /** What it was installed from: a folder, an archive, an install code or a qualified name. */
  source: string;
  /** AGENT.md. */
  persona: string;
  /** `agent.json` as installed (the owner's `--set` overrides applied). */
  agentJson: JsonObject;
  /** `loom.toml`, parsed (empty when the package has none). */
  loomToml: JsonObject;
  /** The `--set` overrides given at install, as `path=value`. */
  settings: string[];
  /** Every skill it brought (dependencies included), by qualified name (`@org/skills/name`). */
  skills: Record<string, InstalledSkillText>;
  installedAt: number;
  /** Per binding, the last instant its trigger was handled (fired, skipped or recorded as missed). */
  lastFires: Record<string, number>;
}

/** Installed packages, by slug. */
export interface InstalledPackageRepository {
  /**
   * Stores a newly installed package.
   * @throws {StoreConflictError} when one with the slug is installed.
   */
  create(record: InstalledPackageRecord): Promise<void>;
  get(slug: string): Promise<InstalledPackageRecord | undefined>;
  /** All of them, by slug. */
  list(): Promise<InstalledPackageRecord[]>;
  /** Removes it; nothing when there is none. */
  delete(slug: string): Promise<void>;
  /** Records the last instant a binding's trigger was handled (nothing when the package is gone). */
  setLastFire(slug: string, binding: string, at: number): Promise<void>;
}

/** Where a workflow agent's plan stands (spec/03). */
export type WorkflowState = 'planning' | 'awaiting_approval' | 'executing' | 'paused' | 'completed' | 'failed' | 'stalled' | 'cancelled';

/** Where one task of a plan stands. */
export type WorkflowTaskStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'blocked' | 'skipped';

/** One task of a workflow's plan. */
export interface WorkflowTaskRecord {
  id: string;
  title: string;
  /** What the assigned agent is asked to do (improved on retries). */
  instruction: string;
  /** The managed agent it is delegated to. */
  agent: string;
  dependsOn: string[];
  /** How the workflow judges the result. */
  acceptance: string;
  status: WorkflowTaskStatus;
  attempts: number;
  result: string | null;
  /** Why the last attempt was not accepted, or why the task was blocked. */
  feedback: string | null;
}

/** A workflow agent's current plan and its progress: one per agent, replaced by its next request. */
export interface WorkflowRecord {
  agentId: string;
  state: WorkflowState;
  /** The user's request the plan serves. */
  request: string;
  summary: string;
  tasks: WorkflowTaskRecord[];
  replans: number;
  /** What the workflow last told the user on its own: why it stalled, failed, or what it accomplished. */
  note: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Workflow agents' plans (spec/03), so a workflow survives a restart. */
export interface WorkflowRepository {
  get(agentId: string): Promise<WorkflowRecord | undefined>;
  /** Inserts or replaces the agent's workflow. */
  put(record: WorkflowRecord): Promise<void>;
  /** The workflows in a state, oldest first. */
  listByState(state: WorkflowState): Promise<WorkflowRecord[]>;
}

/** Where a forged tool is offered: its creator's session, its creator, or every agent granted it (spec/02). */
export type ForgedToolTier = 'session' | 'agent' | 'shared';

/** Whether a forged tool is offered: `retired` when its session was reset, its agent killed, or its source was not kept. */
export type ForgedToolStatus = 'active' | 'demoted' | 'retired';

/** Calls of a forged tool, for its stats and its promotion. */
export interface ForgedToolStats {
  calls: number;
  successes: number;
  /** Sum of the calls' durations, for the mean latency. */
  totalMs: number;
}

/** A forged tool: the request that made it, where it is offered, what the judges said, how it has done. */
export interface ForgedToolRecord {
  id: string;
  name: string;
  /** The agent that forged (or imported) it; kept after the agent is killed for a shared tool. */
  agentId: string;
  agentName: string;
  /** The session a session-tier tool belongs to. */
  sessionId: string | null;
  tier: ForgedToolTier;
  status: ForgedToolStatus;
  /** Why it was retired or demoted. */
  statusReason: string | null;
  mode: 'compose' | 'sandbox';
  /** The forge request; a sandbox tool's `implementation.code` is absent unless its source is persisted. */
  request: JsonObject;
  /** sha256 of a sandbox tool's code (it identifies the code when the source is not kept). */
  codeHash: string | null;
  sourcePersisted: boolean;
  /** Every verdict it received (creation review, promotion panels), oldest first. */
  verdicts: JsonObject[];
  stats: ForgedToolStats;
  origin: 'forged' | 'imported';
  createdAt: number;
  updatedAt: number;
}

/** Forged tools (spec/02), so agent- and shared-tier tools survive a restart. */
export interface ForgedToolRepository {
  /** Inserts or replaces a tool. */
  put(record: ForgedToolRecord): Promise<void>;
  get(id: string): Promise<ForgedToolRecord | undefined>;
  /** Tools, oldest first, optionally of one agent, tier or status. */
  list(filter?: { agentId?: string; tier?: ForgedToolTier; status?: ForgedToolStatus }): Promise<ForgedToolRecord[]>;
  /** Counts one call (its outcome and duration) in the tool's stats. */
  recordCall(id: string, success: boolean, durationMs: number, at: number): Promise<void>;
}

/** Where a channel message stands: stored, then answered, refused, ignored or failed. */
export type ChannelMessageStatus = 'received' | 'answered' | 'refused' | 'ignored' | 'failed';

/**
 * A message that came in on a channel (a chat platform, a webhook), stored before the platform
 * is told it arrived, so a crash loses nothing acknowledged; its platform id makes a duplicate
 * delivery a no-op.
 */
export interface ChannelMessageRecord {
  /** The `[[channels]]` name it came in on. */
  channel: string;
  /** The platform's id of the message (unique within the channel). */
  platformId: string;
  userId: string;
  userName: string | null;
  conversationId: string;
  conversationKind: 'direct' | 'group';
  thread: string | null;
  /** Whether the bot was mentioned (group messages). */
  mentioned: boolean;
  text: string;
  status: ChannelMessageStatus;
  /** The reply sent, or why it was refused, ignored or failed. */
  note: string | null;
  receivedAt: number;
  updatedAt: number;
}

/** A person on a channel waiting for, or given, the owner's leave to talk to its agent. */
export interface ChannelPairingRecord {
  /** The one-time code the person was given. */
  code: string;
  channel: string;
  userId: string;
  userName: string | null;
  createdAt: number;
  approvedAt: number | null;
}

/** A stored message as a node taking it up for answering finds it (decision 0061). */
export interface ChannelMessageClaim {
  /** The message as it stands (edited or withdrawn while it waited, settled by another node). */
  message: ChannelMessageRecord;
  /** Whether this node holds it now, to answer it: it is `received`, and no other node alive holds it. */
  held: boolean;
  /** The id of the node holding it (this one when `held`), as the cluster shows it; null when none does, or alone (SQLite). */
  claimedBy: string | null;
}

/** Channel messages and pairings. */
export interface ChannelRepository {
  /** Stores a message that came in; false when its platform id was stored before (a duplicate delivery). */
  receive(record: ChannelMessageRecord): Promise<boolean>;
  /** Records where a stored message stands. */
  settle(channel: string, platformId: string, status: ChannelMessageStatus, note: string | null, at: number): Promise<void>;
  /** A stored message. */
  get(channel: string, platformId: string): Promise<ChannelMessageRecord | undefined>;
  /**
   * Changes a message not answered yet (still `received`): its new text, or withdrawn (it was
   * deleted: `ignored`, with `note`). False when it was answered already, or is not stored.
   */
  amend(channel: string, platformId: string, change: { text: string } | { withdrawn: string }, at: number): Promise<boolean>;
  /**
   * Takes a stored message up for answering, before anything is shown to the person: on a
   * database several nodes share, in one statement, recording this node as the one answering it,
   * unless another node whose heartbeat is fresh (alive, or stopping and not yet done: it gives
   * its claims up with `releaseAll`) did so first; a claim of a node that is gone is taken over. Alone (SQLite), every message still `received` is this node's.
   * Undefined when the message is not stored.
   */
  claim(channel: string, platformId: string): Promise<ChannelMessageClaim | undefined>;
  /**
   * Gives up this node's claim on a message it took up and did not settle (its answer gave up),
   * so that another node may take it up at once; nothing when the message is settled or another
   * node holds it, and nothing alone (SQLite).
   */
  release(channel: string, platformId: string): Promise<void>;
  /**
   * Gives up every claim of this node on a message still `received` (its clean stop, once its
   * channels' answers ended), so that another node answers them at once rather than once this
   * node's heartbeat is stale; nothing alone (SQLite).
   */
  releaseAll(): Promise<void>;
  /**
   * Messages of a channel still `received` (a crash came between storing and answering), oldest
   * first; with `notClaimedHere`, only those this node has not taken up (on a shared database).
   */
  unsettled(channel: string, options?: { notClaimedHere?: boolean }): Promise<ChannelMessageRecord[]>;
  /** A channel's newest messages, newest first. */
  recent(channel: string, limit: number): Promise<ChannelMessageRecord[]>;
  /** Stores a pairing request (a person's code), replacing an unapproved one of the same person. */
  requestPairing(record: ChannelPairingRecord): Promise<void>;
  /** Approves the pairing with `code`; undefined when there is none. */
  approvePairing(code: string, at: number): Promise<ChannelPairingRecord | undefined>;
  /** The pairing of a person on a channel, approved or not. */
  pairingOf(channel: string, userId: string): Promise<ChannelPairingRecord | undefined>;
  /** Pairings, newest first, optionally of one channel. */
  pairings(channel?: string): Promise<ChannelPairingRecord[]>;
}

/**
 * The persistent state of a Loom daemon, split by domain. Every write is committed before its
 * promise resolves. Later subsystems add domains.
 */
export interface Store {
  readonly agents: AgentRepository;
  readonly sessions: SessionRepository;
  readonly memory: MemoryRepository;
  readonly usage: UsageRepository;
  readonly events: EventRepository;
  readonly approvals: ApprovalRepository;
  /** A2A tasks, bounded (the oldest finished evicted first). */
  readonly tasks: TaskRepository;
  /** Push-notification configs of A2A tasks (deleted with their task). */
  readonly a2aPushConfigs: A2aPushConfigRepository;
  /** Runs of package bindings. */
  readonly packageRuns: PackageRunRepository;
  /** Scheduled wake-ups of agents, run or skipped. */
  readonly scheduleRuns: ScheduleRunRepository;
  /** Installed packages. */
  readonly packages: InstalledPackageRepository;
  /** Workflow agents' plans. */
  readonly workflows: WorkflowRepository;
  /** Tools agents forged. */
  readonly forgedTools: ForgedToolRepository;
  /** Messages that came in on channels, and pairings. */
  readonly channels: ChannelRepository;
  /** Turns under way, step by step (decision 0045). */
  readonly turns: TurnJournalRepository;
  /** Flushes and closes. Further calls reject. */
  close(): Promise<void>;
}
