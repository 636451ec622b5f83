import {
  type ApprovalRecord,
  type ApprovalStatus,
  type EventQuery,
  type EventRecord,
  type Principal,
  principalKey,
  type UsageBucket,
  type WorkflowRecord,
} from '../contracts/index.ts';
import { AccessDeniedError, SessionNotFoundError } from '../errors/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { AgentEvent, TurnResult } from '../runtime/index.ts';
import type { ApprovalDecision } from './approval-requests.ts';
import { type CallerForgedTools, forgedToolsAs } from './caller-forged-tools.ts';
import type { Caller } from './agent-runtime.ts';
import type { AgentDetailView, AgentView } from './agent-view.ts';
import { type Action, callerOf, principalOfCaller, reachesAgent, refusalOf, requireAllowed } from './authority.ts';
import type { KernelEvent } from './event-bus.ts';
import type { Kernel, SpawnOptions } from './kernel-api.ts';
import type { CancelledTurnView, EventId, FollowedEvent, RunningTurnView } from './live-turns.ts';
import type { KeyedTurn, SendOptions } from './message-flow.ts';
import type { SessionSummary, SessionView } from './session-view.ts';
import type { UsageRow } from './usage-report.ts';
import { type ScheduleRunView, toScheduleRunView } from './schedule-run-view.ts';

/** Which session of an agent a call is about: one the caller chose by id, or its own (within a door's `thread`). */
export interface SessionChoice {
  /** A door's conversation within the principal's (an A2A context, a `/v1` user). */
  thread?: string | undefined;
  /** A session the principal holds, chosen by id (the dashboard's session picker). */
  sessionId?: string | undefined;
}
import { LOCAL_PRINCIPAL_NAME } from '../config/index.ts';

/** How many audit rows a page holds unless the query says otherwise (the kernel's own default). */
const DEFAULT_AUDIT_LIMIT = 500;

/**
 * The kernel as one principal sees it: every operation checks the principal's role and reach
 * inside ({@link AUTHORITY}), and every read shows only what it may see. Doors authenticate,
 * parse, make one call here and render; they decide nothing. Built by {@link kernelAs}.
 */
export class CallerKernel {
  readonly principal: Principal;
  readonly #kernel: Kernel;

  /** Forged tools (spec/02) as the principal sees and may change them. */
  readonly forgedTools: CallerForgedTools;

  constructor(kernel: Kernel, principal: Principal) {
    this.#kernel = kernel;
    this.principal = principal;
    this.forgedTools = forgedToolsAs(kernel, this);
  }

  /** Whether the principal may do `action` (on the agent named `agent`). */
  may(action: Action, agent?: string): boolean {
    return refusalOf(this.principal, action, agent === undefined ? undefined : { kind: 'agent', name: agent }) === undefined;
  }

  /** @throws {AccessDeniedError} when the principal may not do `action` (on `agent`), naming why. */
  require(action: Action, agent?: string): void {
    requireAllowed(this.principal, action, agent === undefined ? undefined : { kind: 'agent', name: agent });
  }

  /** @throws {AccessDeniedError} when the principal may not do `action` on the package `slug` (named by its agent). */
  requirePackage(action: Action, slug: string): void {
    requireAllowed(this.principal, action, { kind: 'package', name: slug });
  }

  /** Whether the agent named `name` is in the principal's reach. */
  reaches(name: string): boolean {
    return reachesAgent(this.principal, name);
  }

  /** Who the principal is, as a cancelled turn or a decision names them (see {@link bylineOf}). */
  get byline(): string {
    return bylineOf(this.principal);
  }

  /** The ids of the live agents the principal may read, or undefined when it may read every row. */
  readableAgentIds(): ReadonlySet<string> | undefined {
    if (this.principal.role !== 'user') return undefined;
    return new Set(this.list().map((agent) => agent.id));
  }

  /** The live agents the principal reaches, in spawn order. */
  list(): AgentView[] {
    return this.#kernel.list().filter((agent) => this.reaches(agent.name));
  }

  /**
   * The live agent `reference` names, when the principal reaches it.
   * @throws {AgentNotFoundError} when there is none; {AccessDeniedError} when it is out of reach.
   */
  get(reference: string): AgentDetailView {
    const agent = this.#kernel.get(reference);
    this.require('read agents', agent.name);
    return agent;
  }

  /**
   * The name of the live agent `reference` names, when the principal reaches it: as {@link get}
   * without building the agent's view (a turn's doors ask it on every message).
   * @throws {AgentNotFoundError} when there is none; {AccessDeniedError} when it is out of reach.
   */
  agentName(reference: string): string {
    const name = this.#kernel.nameOf(reference);
    this.require('read agents', name);
    return name;
  }

  async spawn(manifest: Manifest, options: Pick<SpawnOptions, 'parent'> = {}): Promise<AgentView> {
    this.require('spawn agents');
    return this.#kernel.spawn(manifest, options);
  }

  async update(reference: string, manifest: Manifest): Promise<AgentView> {
    this.require('update agents');
    return this.#kernel.update(reference, manifest);
  }

  async kill(reference: string): Promise<AgentView[]> {
    this.require('kill agents');
    return this.#kernel.kill(reference);
  }

  async suspend(reference: string): Promise<AgentView> {
    this.require('suspend agents');
    return this.#kernel.suspend(reference);
  }

  async resume(reference: string): Promise<AgentView> {
    this.require('resume agents');
    return this.#kernel.resume(reference);
  }

  /**
   * The conversation of the principal's own messages, or of a door's `thread` within them (an
   * A2A context, a `/v1` user): the owner's own is the agent's main session (undefined); any other
   * key has one of its own, named by the whole key (name, role and agents), so a key renamed or
   * given other agents holds nothing the old one did.
   */
  conversation(thread?: string): string | undefined {
    if (this.principal.role === 'owner') return thread;
    // A channel person speaks in the chat they wrote in, shared with everyone in it.
    if (this.principal.conversation !== undefined) return this.principal.conversation;
    const own = `principal:${principalKey(this.principal)}`;
    return thread === undefined ? own : `${own}/${thread}`;
  }

  /** Whether the principal holds a session of `conversation` (null: the main session): owners hold every one, a key its own and its threads', a channel person its chat's. */
  holds(conversation: string | null): boolean {
    if (this.principal.role === 'owner') return true;
    if (this.principal.conversation !== undefined) return conversation === this.principal.conversation;
    const own = this.conversation();
    return conversation !== null && (conversation === own || conversation.startsWith(`${own}/`));
  }

  /**
   * The conversation of `where`: the session `sessionId` names, when the principal holds it, else
   * the principal's own (or its `thread`).
   * @throws {SessionNotFoundError} for a session of the agent the principal does not hold, as for one that does not exist.
   */
  async #conversationOf(agent: string, where: SessionChoice): Promise<string | undefined> {
    if (where.sessionId === undefined) return this.conversation(where.thread);
    const session = await this.#kernel.findSession(agent, where.sessionId);
    if (session === undefined || !this.holds(session.conversation)) throw new SessionNotFoundError(agent, where.sessionId);
    return session.conversation ?? undefined;
  }

  /** Sends a message as the principal, into its own session or the one it chose. @throws as `Kernel.send`; {AccessDeniedError} for a viewer or an agent out of reach. */
  async send(reference: string, message: string, options: Omit<SendOptions, 'caller' | 'conversation'> & SessionChoice = {}): Promise<TurnResult> {
    const { thread, sessionId, ...rest } = options;
    const name = this.agentName(reference);
    this.require('send messages', name);
    const conversation = await this.#conversationOf(name, { thread, sessionId });
    return this.#kernel.send(name, message, { ...rest, caller: callerOf(this.principal), ...(conversation === undefined ? {} : { conversation }) });
  }

  /** The same turn as a stream of events. The checks run before the first event (a refusal throws). */
  stream(reference: string, message: string, options: Omit<SendOptions, 'caller' | 'emit' | 'conversation'> & SessionChoice = {}): AsyncIterable<AgentEvent> {
    const { thread, sessionId, ...rest } = options;
    const name = this.agentName(reference);
    this.require('send messages', name);
    if (sessionId === undefined) {
      const conversation = this.conversation(thread);
      return this.#kernel.stream(name, message, { ...rest, caller: callerOf(this.principal), ...(conversation === undefined ? {} : { conversation }) });
    }
    const kernel = this.#kernel;
    const chosen = this.#conversationOf(name, { sessionId });
    const caller = callerOf(this.principal);
    return (async function* resumed(): AsyncGenerator<AgentEvent> {
      const conversation = await chosen;
      yield* kernel.stream(name, message, { ...rest, caller, ...(conversation === undefined ? {} : { conversation }) });
    })();
  }

  /**
   * The turn the principal's message with `idempotencyKey` (in its own session, or its `thread`'s)
   * started, as a retry with the key finds it, without starting one: undefined when it started none.
   * @throws as `Kernel.keyedTurn`; {AccessDeniedError} for a viewer or an agent out of reach.
   */
  async keyedTurn(reference: string, idempotencyKey: string, where: Pick<SessionChoice, 'thread'> = {}): Promise<KeyedTurn | undefined> {
    const name = this.agentName(reference);
    this.require('send messages', name);
    const conversation = this.conversation(where.thread);
    return this.#kernel.keyedTurn(name, idempotencyKey, { caller: callerOf(this.principal), ...(conversation === undefined ? {} : { conversation }) });
  }

  /** A workflow command (`go`, `cancel`, `pause`, `resume`) sent as a message, with the workflow after it. */
  async steerWorkflow(
    reference: string,
    command: 'go' | 'cancel' | 'pause' | 'resume',
    signal: AbortSignal,
  ): Promise<{ reply: string; workflow: WorkflowRecord | undefined }> {
    const agent = this.get(reference);
    this.require('steer workflows', agent.name);
    const result = await this.#kernel.send(agent.name, command, { caller: callerOf(this.principal), signal });
    return { reply: result.text, workflow: await this.#kernel.workflow(agent.name) };
  }

  async workflow(reference: string): Promise<WorkflowRecord | undefined> {
    return this.#kernel.workflow(this.agentName(reference));
  }

  /** The turn running on the principal's own session of the agent (or its `thread`'s), or on the one `sessionId` names when it holds it, if any. @throws {SessionNotFoundError} */
  async runningTurn(reference: string, where: SessionChoice = {}): Promise<RunningTurnView | undefined> {
    const name = this.agentName(reference);
    const conversation = await this.#conversationOf(name, where);
    return this.#kernel.runningTurn(name, conversation === undefined ? {} : { conversation });
  }

  /**
   * Follows the turn running on the principal's own session of the agent (or the one `where`
   * chooses), after the event `after` when given (a client's `Last-Event-ID`, decision 0059); on a
   * cluster, one another node runs until `signal` aborts.
   * @throws {SessionNotFoundError} {TurnNotRunningError}
   */
  async followTurn(reference: string, where: SessionChoice = {}, after?: EventId, signal?: AbortSignal): Promise<AsyncIterable<FollowedEvent>> {
    const name = this.agentName(reference);
    const conversation = await this.#conversationOf(name, where);
    return this.#kernel.followTurn(name, {
      ...(conversation === undefined ? {} : { conversation }),
      ...(after === undefined ? {} : { after }),
      ...(signal === undefined ? {} : { signal }),
    });
  }

  /** Cancels the turn running on the principal's own session of the agent (or its `thread`'s), or on the one `sessionId` names when it holds it. @throws {SessionNotFoundError} {TurnNotRunningError} */
  async cancelTurn(reference: string, where: SessionChoice = {}): Promise<CancelledTurnView> {
    const name = this.agentName(reference);
    this.require('cancel turns', name);
    const conversation = await this.#conversationOf(name, where);
    return this.#kernel.cancelTurn(name, { caller: callerOf(this.principal), by: this.byline, ...(conversation === undefined ? {} : { conversation }) });
  }

  /**
   * Cancels, as the principal, the turn `of.caller`'s message with `idempotencyKey` started in its session (its
   * `thread`'s): that turn by its journal id, never the session's current one (an A2A task's). The principal must be
   * allowed to cancel turns of the agent and hold that session; the turn's end names it ({@link byline}). Resolves
   * `canceled` here, `elsewhere` (another node runs it, or will), `ended`, or `none` (the key started none).
   * @throws {AccessDeniedError} when the principal may not cancel turns of the agent, or does not hold that session.
   */
  async cancelKeyedTurn(
    reference: string,
    idempotencyKey: string,
    of: { caller: Caller; thread?: string | undefined },
  ): Promise<'canceled' | 'elsewhere' | 'ended' | 'none'> {
    const name = this.agentName(reference);
    this.require('cancel turns', name);
    const conversation = of.caller.kind === 'user' ? new CallerKernel(this.#kernel, principalOfCaller(of.caller)).conversation(of.thread) : of.thread;
    if (!this.holds(conversation ?? null))
      throw new AccessDeniedError(`${this.byline} may not cancel a turn of agent "${name}" in a session that is not its own`);
    const turn = await this.#kernel.keyedTurn(name, idempotencyKey, {
      caller: callerOf(this.principal),
      ...(conversation === undefined ? {} : { conversation }),
    });
    if (turn === undefined) return 'none';
    if (turn.state === 'done') return 'ended';
    return turn.cancel(this.byline) ? 'canceled' : 'elsewhere';
  }

  /** The principal's own session of the agent (the main one for the owner), or the one `sessionId` names when it holds it. @throws {SessionNotFoundError} */
  async session(reference: string, where: SessionChoice = {}): Promise<SessionView> {
    const name = this.agentName(reference);
    const conversation = await this.#conversationOf(name, where);
    return this.#kernel.session(name, conversation === undefined ? {} : { conversation });
  }

  /** The sessions of the agent the principal holds: every one for the owner, its own and its threads' for any other key. */
  async sessions(reference: string): Promise<SessionSummary[]> {
    const name = this.agentName(reference);
    return (await this.#kernel.sessions(name)).filter((session) => this.holds(session.conversation));
  }

  /** Empties the agent's main session, or the one `sessionId` (or the principal's `thread`) names. */
  async resetSession(reference: string, where: SessionChoice = {}): Promise<void> {
    this.require('reset sessions');
    const name = this.agentName(reference);
    const conversation = where.sessionId === undefined && where.thread === undefined ? undefined : await this.#conversationOf(name, where);
    await this.#kernel.resetSession(name, conversation === undefined ? {} : { conversation });
  }

  /** The agent's scheduled wake-ups, newest due first (decision 0046). */
  async scheduleRuns(reference: string, options: { limit?: number } = {}): Promise<ScheduleRunView[]> {
    const { name } = this.get(reference);
    this.require('read schedule runs', name);
    return (await this.#kernel.wakeRuns.list(name, options)).map(toScheduleRunView);
  }

  /** Forces a wake-up of a continuous or periodic agent now, recorded as a `manual` run; resolves with the run once it has ended. */
  async wakeNow(reference: string): Promise<ScheduleRunView> {
    const { name } = this.get(reference);
    this.require('force wake-ups', name);
    return toScheduleRunView(await this.#kernel.wakeRuns.now(name, { by: this.byline }));
  }

  /** The agent a query names, when the principal reaches it (its id), or undefined for none named. */
  #queried(agent: string | undefined): string | undefined {
    return agent === undefined ? undefined : this.get(agent).id;
  }

  /** The audit log rows the principal may read: every row for owners and viewers, its agents' rows for a `user`. */
  async audit(query: { agent?: string } & Omit<EventQuery, 'agentId'> = {}): Promise<EventRecord[]> {
    const readable = this.readableAgentIds();
    if (readable === undefined) return this.#kernel.audit(query);
    const agent = this.#queried(query.agent);
    if (agent !== undefined) return this.#kernel.audit({ ...query, agent });
    // One page per readable agent, merged in the page's order: the limit counts rows the key may see.
    const limit = query.limit ?? DEFAULT_AUDIT_LIMIT;
    const direction = query.order === 'desc' ? -1 : 1;
    const pages = await Promise.all([...readable].map((id) => this.#kernel.audit({ ...query, agent: id, limit })));
    return pages
      .flat()
      .sort((first, second) => direction * (first.seq - second.seq))
      .slice(0, limit);
  }

  async usage(query: { agent?: string; since?: number } = {}): Promise<UsageRow[]> {
    this.#queried(query.agent);
    const rows = await this.#kernel.usage(query);
    const readable = this.readableAgentIds();
    return readable === undefined ? rows : rows.filter((row) => readable.has(row.agent_id));
  }

  async usageSeries(query: { since: number; until: number; stepMs: number; agent?: string }): Promise<(UsageBucket & { agentName: string | null })[]> {
    this.#queried(query.agent);
    const buckets = await this.#kernel.usageSeries(query);
    const readable = this.readableAgentIds();
    return readable === undefined ? buckets : buckets.filter((bucket) => readable.has(bucket.agentId));
  }

  /** Subscribes to the kernel events of the agents the principal reaches. Returns the unsubscribe. */
  subscribe(listener: (event: KernelEvent) => void): () => void {
    return this.#kernel.events.subscribe((event) => {
      if (this.reaches(event.name)) listener(event);
    });
  }

  /** The approval requests of the agents the principal reaches. */
  async approvals(status: ApprovalStatus | 'all' = 'pending'): Promise<ApprovalRecord[]> {
    const readable = this.readableAgentIds();
    const records = await this.#kernel.approvals.list(status);
    return readable === undefined ? records : records.filter((record) => readable.has(record.agentId));
  }

  /**
   * Approves or denies a request as the principal (named as the decider): an owner any request, a
   * channel's approver (`Principal.approves`) those of its agent while they wait.
   * @throws {AccessDeniedError} naming why.
   */
  async decide(id: string, decision: Omit<ApprovalDecision, 'by'>): Promise<ApprovalRecord> {
    const action = decision.approved ? 'approve tool calls' : 'deny tool calls';
    if (!this.may(action)) {
      // Allowed for some agents only: judged by the agent of the request, when it waits.
      const request = (await this.#kernel.approvals.list('pending')).find((record) => record.id === id);
      this.require(action, request?.agentName);
    }
    return this.#kernel.approvals.decide(id, { ...decision, by: this.principal.name });
  }
}

/** Who `principal` is, as a cancelled turn or a decision names them: `the owner` for `local`, else the key's name quoted. */
function bylineOf(principal: Principal): string {
  return principal.name === LOCAL_PRINCIPAL_NAME ? `the ${principal.role}` : `"${principal.name}"`;
}

/**
 * The kernel as `principal` sees it: what every door calls. @example
 * await kernelAs(kernel, principal).send('helper', 'hello', { signal })
 */
export function kernelAs(kernel: Kernel, principal: Principal): CallerKernel {
  return new CallerKernel(kernel, principal);
}
