import type { ApprovalRecord, ApprovalStatus, Clock, IdGenerator, JsonObject, JsonValue, Store } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import { type RequestSummary, type Waiter, waitForDecision, type WaitPlace } from './approval-wait.ts';
import {
  type ApprovalDecision,
  type ApprovalEvent,
  type ApprovalNode,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  isQuestion,
  type OpenApproval,
  storedDecision,
} from './approval-requests.ts';
import { EXPIRED_BY_RESTART, EXPIRED_BY_SHUTDOWN, RESTART_REASON, SHUTDOWN_REASON } from './approval-requests.ts';

/**
 * Human approvals (spec/01 `autonomous.approval_required_for`). A request is stored before
 * anyone is asked; a decision is stored before the waiting tool call hears it. A request stays
 * `pending` only while a turn of this process waits for it: nobody deciding within the timeout
 * closes it as `expired` (by `timeout`), a cancelled turn closes it (by `cancel`), and requests
 * left by a previous process are closed at boot (`expireInterrupted`, by `restart`), but those a
 * turn resumed from its journal waits on again (decision 0045, `resume`). A closed
 * request cannot be decided, so nobody is told "approved" for a call that will never run
 * (docs/decisions/0012).
 */
export class ApprovalService {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #ids: IdGenerator;
  readonly #timeoutMs: number;
  readonly #publish: (event: ApprovalEvent) => void;
  readonly #node: ApprovalNode | undefined;
  readonly #waiters = new Map<string, Waiter>();
  /**
   * Pending requests left by a previous process that a turn resumed at start will wait on again
   * (see {@link resume}): decided before it does, the decision is recorded for it to read.
   */
  readonly #resuming = new Set<string>();
  /** What a turn's wait needs of this service (see `waitForDecision`). */
  readonly #waitPlace: WaitPlace;
  /** Set by {@link shutdown}: nothing more is asked. */
  #stopped = false;

  constructor(options: {
    store: Store;
    clock: Clock;
    ids: IdGenerator;
    timeoutMs?: number;
    publish: (event: ApprovalEvent) => void;
    node?: ApprovalNode | undefined;
  }) {
    this.#node = options.node;
    this.#store = options.store;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    this.#publish = options.publish;
    this.#waitPlace = {
      waiters: this.#waiters,
      clock: this.#clock,
      timeoutMs: this.#timeoutMs,
      store: this.#store,
      close: (summary, by, reason) => this.#close(summary, by, reason),
    };
  }

  /**
   * Stores a pending request and returns it with the decision to await. When the turn is
   * cancelled first, the request is closed as `expired` (by `cancel`) and the decision rejects
   * with the signal's reason. When `withdrawn` aborts first (the asker took its question back:
   * an MCP server cancelled its request, the call that asked ended), it is closed as `expired`
   * by `withdrawn` and the decision is a refusal by `withdrawn`. `onId` is awaited with the
   * request's id before the request is stored: a turn's journal records that its call waits for
   * it (decision 0045), so that a request shown to anyone is one the turn resumes on.
   * @throws {LoomError} `APPROVALS_STOPPED` once {@link shutdown} has begun.
   */
  async open(
    agent: { id: string; name: string },
    tool: string,
    input: JsonValue,
    signal: AbortSignal,
    options: { answerSchema?: JsonObject; withdrawn?: AbortSignal; onId?: (id: string) => Promise<void> } = {},
  ): Promise<OpenApproval> {
    if (this.#stopped) throw new LoomError('APPROVALS_STOPPED', 'system', `cannot ask a person about ${tool} for agent "${agent.name}": Loom is stopping`);
    const id = this.#ids.uuid();
    const at = this.#clock.now();
    const expiresAt = at + this.#timeoutMs;
    const summary: RequestSummary = { id, agentId: agent.id, agentName: agent.name, tool };
    // Waited for before the row exists: a decision never finds it pending with nobody waiting.
    const waiting = waitForDecision(this.#waitPlace, summary, signal, options);
    try {
      await options.onId?.(id);
      await this.#store.approvals.create({
        ...summary,
        input,
        status: 'pending',
        requestedAt: at,
        expiresAt,
        decidedAt: null,
        decidedBy: null,
        reason: null,
        nodeId: this.#node?.id ?? null,
      });
    } catch (error) {
      this.#waiters.delete(id);
      throw error;
    }
    this.#publish({ type: 'approval-request', at, agentId: agent.id, name: agent.name, approvalId: id, tool });
    // Closed (a shutdown) while the row was being written: the close found nothing to close, so it is closed now.
    const closedAs = waiting.waiter.closedAs;
    if (closedAs !== undefined) await this.#close(summary, closedAs.by, closedAs.reason).catch(() => false);
    waiting.arm(this.#timeoutMs);
    return { id, expiresAt, decision: waiting.decision };
  }

  /**
   * Waits again, for a turn resumed after a restart (decision 0045), on the request its call
   * waited for when the daemon stopped: still pending, it is decided as any other (until the
   * time it was to expire at); decided meanwhile, that decision. Undefined when there is no such
   * request of the agent, or it was closed (expired): the call asks again.
   * @throws {LoomError} `APPROVALS_STOPPED` once {@link shutdown} has begun.
   */
  async resume(agent: { id: string; name: string }, id: string, signal: AbortSignal): Promise<OpenApproval | undefined> {
    if (this.#stopped) throw new LoomError('APPROVALS_STOPPED', 'system', `cannot wait for approval "${id}" for agent "${agent.name}": Loom is stopping`);
    if (this.#waiters.has(id)) return undefined;
    const stored = await this.#store.approvals.get(id);
    if (stored === undefined || stored.agentId !== agent.id || stored.status === 'expired') {
      this.#resuming.delete(id);
      return undefined;
    }
    const summary: RequestSummary = { id, agentId: stored.agentId, agentName: stored.agentName, tool: stored.tool };
    // Waited for on this node now (its turn taken over from one that died): a decision made on
    // another node is sent here, not refused as no turn's.
    if (stored.status === 'pending' && stored.nodeId !== (this.#node?.id ?? null)) await this.#store.approvals.adopt(id, this.#node?.id ?? null);
    const waiting = waitForDecision(this.#waitPlace, summary, signal, {});
    // Waited for from here on: a decision now reaches the waiter; one recorded before is read below.
    this.#resuming.delete(id);
    const record = (await this.#store.approvals.get(id)) ?? stored;
    if (record.status === 'pending') waiting.arm(Math.max(0, record.expiresAt - this.#clock.now()));
    else waiting.waiter.finish(storedDecision(record, EXPIRED_BY_RESTART));
    return { id, expiresAt: record.expiresAt, decision: waiting.decision };
  }

  /**
   * Closes every request a turn of this process waits for as `expired`, by `shutdown`, with a
   * reason saying Loom stopped and nothing was run; each waiting caller gets that as a refusal
   * (a question, as declined). Their timeouts end with them, so no timer holds the process. Asks
   * after this are refused. Resolves once every request is closed in the store. Idempotent.
   */
  shutdown(): Promise<void> {
    this.#stopped = true;
    return Promise.all([...this.#waiters.values()].map((waiter) => waiter.close(EXPIRED_BY_SHUTDOWN, SHUTDOWN_REASON))).then(() => undefined);
  }

  /**
   * Approves or denies a pending request and hands the decision to the turn waiting for it.
   * A pending request no turn of this process waits for (its process is gone) is closed as
   * `expired` (by `restart`) and refused: approving it would run nothing.
   * @throws {LoomError} `APPROVAL_NOT_FOUND`; `APPROVAL_DECIDED` when it was decided or closed
   * already, or nobody waits for it any more (the message names its state and why).
   */
  async decide(id: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    const waiter = this.#waiters.get(id);
    // Its turn resumes and has not reached it yet: recorded, it reads the decision when it does.
    if (waiter === undefined && this.#resuming.has(id)) return this.#record(id, decision);
    if (waiter === undefined) {
      const existing = await this.#store.approvals.get(id);
      if (existing?.status === 'pending') {
        const asker = await this.#askingNode(existing);
        if (asker !== undefined) return this.#decideFor(existing, decision, asker);
      }
      if (existing?.status === 'pending' && !this.#waiters.has(id) && (await this.#close(existing, EXPIRED_BY_RESTART, RESTART_REASON))) {
        const verb = decision.approved ? 'approve' : 'deny';
        throw new LoomError(
          'APPROVAL_DECIDED',
          'user',
          `cannot ${verb} approval "${id}": no turn waits for it any more (${RESTART_REASON}); it is now expired`,
          {
            details: { id, status: 'expired', decidedBy: EXPIRED_BY_RESTART },
          },
        );
      }
      throw await this.#refusal(id);
    }
    // The turn was cancelled and its request is being closed: the decision comes too late.
    if (waiter.closing !== undefined) {
      await waiter.closing;
      throw await this.#refusal(id);
    }
    if (waiter.checkAnswer !== undefined && decision.approved) {
      const problems = decision.answer === undefined ? 'it is a question: approve it with an answer' : waiter.checkAnswer(decision.answer);
      if (problems !== undefined) throw new LoomError('INVALID_ANSWER', 'user', `cannot answer approval "${id}": ${problems}`, { details: { id } });
    }
    const record = await this.#record(id, decision);
    const status = record.status;
    if (waiter.signal.aborted) {
      // Cancelled while the decision was being written: recorded, but the call will not run.
      throw new LoomError(
        'APPROVAL_DECIDED',
        'user',
        `approval "${id}" was recorded as ${status}, but its turn was cancelled at the same moment; nothing was run — ask the agent again`,
        {
          details: { id, status },
        },
      );
    }
    waiter.finish(decision);
    return record;
  }

  /**
   * Hands a decision another node recorded (heard as its `approval-decide` event) to the turn of
   * this process that waits for it, if one does.
   */
  async heard(id: string): Promise<void> {
    const waiter = this.#waiters.get(id);
    if (waiter === undefined || waiter.closing !== undefined) return;
    const record = await this.#store.approvals.get(id);
    if (record === undefined || record.status === 'pending') return;
    waiter.finish(storedDecision(record, EXPIRED_BY_RESTART));
  }

  /**
   * Closes every pending request that no turn waits for as `expired`, by `restart`, with a reason
   * saying nothing was run. Called at boot: a request left pending by a previous process (a
   * restart or a crash) can never run its call, since the turn that asked is gone, unless that
   * turn resumes (decision 0045): the requests in `resuming` stay pending for it (see
   * {@link resume}). Requests of another node that runs are its own. Resolves with how many
   * were closed.
   */
  async expireInterrupted(resuming: ReadonlySet<string> = new Set()): Promise<number> {
    let closed = 0;
    for (const record of await this.#store.approvals.list({ status: 'pending' })) {
      if (resuming.has(record.id)) {
        this.#resuming.add(record.id);
        continue;
      }
      if (this.#waiters.has(record.id) || (await this.#askingNode(record)) !== undefined) continue;
      if (await this.#close(record, EXPIRED_BY_RESTART, RESTART_REASON)) closed += 1;
    }
    return closed;
  }

  /**
   * Keeps `ids` pending for a turn about to resume here, taken over from another node (decision
   * 0061): a decision made before the turn reaches its call is recorded and read when it does,
   * as for the turns resumed at start (see {@link expireInterrupted}); `release` closes those it
   * never reached.
   */
  keep(ids: readonly string[]): void {
    for (const id of ids) this.#resuming.add(id);
  }

  /**
   * Closes, as `expired` by `restart`, those of `ids` kept for a resumed turn (see
   * {@link expireInterrupted}) that it never waited on again: it ended before it reached them.
   */
  async release(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      if (!this.#resuming.delete(id)) continue;
      const record = await this.#store.approvals.get(id);
      if (record !== undefined) await this.#close(record, EXPIRED_BY_RESTART, RESTART_REASON);
    }
  }

  /** The other node whose turn waits for `request`, while that node runs; undefined for this node's, an old request's or a gone node's. */
  async #askingNode(request: ApprovalRecord): Promise<{ name: string; url: string | null } | undefined> {
    const { nodeId } = request;
    if (this.#node === undefined || nodeId === null || nodeId === this.#node.id) return undefined;
    return this.#node.find(nodeId);
  }

  /**
   * Records a decision on a request another node's turn waits for; that node hears it (the
   * `approval-decide` event reaches it through the store) and hands it to its turn. An answer to a
   * question is kept in memory only, so it is given on the node that asked.
   */
  async #decideFor(request: ApprovalRecord, decision: ApprovalDecision, asker: { name: string; url: string | null }): Promise<ApprovalRecord> {
    const { id } = request;
    if (decision.answer !== undefined || (decision.approved && isQuestion(request.input))) {
      const where = asker.url === null ? `node "${asker.name}"` : `node "${asker.name}" (${asker.url})`;
      throw new LoomError(
        'APPROVAL_ELSEWHERE',
        'user',
        `cannot answer question "${id}" on this node: the turn that asked it runs on ${where}, and answers are kept in that node's memory only; answer it there (denying works from any node)`,
        {
          details: { id, node: asker.name, url: asker.url },
        },
      );
    }
    return this.#record(id, decision);
  }

  /**
   * Records `decision` on pending request `id` and announces it (`approval-decide`).
   * @throws {LoomError} the refusal when it is no longer pending.
   */
  async #record(id: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    const at = this.#clock.now();
    const status = decision.approved ? 'approved' : 'denied';
    if (!(await this.#store.approvals.decide(id, { status, at, by: decision.by, reason: decision.reason }))) throw await this.#refusal(id);
    const record = (await this.#store.approvals.get(id)) as ApprovalRecord;
    this.#publish({ type: 'approval-decide', at, agentId: record.agentId, name: record.agentName, approvalId: id, tool: record.tool, status, by: decision.by });
    return record;
  }

  /** Approval requests, oldest first; pending ones by default. */
  list(status: ApprovalStatus | 'all' = 'pending'): Promise<ApprovalRecord[]> {
    return this.#store.approvals.list(status === 'all' ? { limit: 500 } : { status, limit: 500 });
  }

  /** Closes a pending request as `expired` and announces it; false when it was no longer pending. */
  async #close(request: RequestSummary, by: string, reason: string): Promise<boolean> {
    const at = this.#clock.now();
    if (!(await this.#store.approvals.decide(request.id, { status: 'expired', at, by, reason }))) return false;
    this.#publish({
      type: 'approval-decide',
      at,
      agentId: request.agentId,
      name: request.agentName,
      approvalId: request.id,
      tool: request.tool,
      status: 'expired',
      by,
    });
    return true;
  }

  /** The error for a request that cannot be decided: unknown, or no longer pending (its state and why). */
  async #refusal(id: string): Promise<LoomError> {
    const existing = await this.#store.approvals.get(id);
    if (existing === undefined) return new LoomError('APPROVAL_NOT_FOUND', 'user', `no approval with id "${id}"`);
    const by = existing.decidedBy === null ? '' : ` by ${existing.decidedBy}`;
    const why = existing.reason === null ? '' : ` (${existing.reason})`;
    return new LoomError('APPROVAL_DECIDED', 'user', `approval "${id}" was already decided: ${existing.status}${by}${why}`, {
      details: { id, status: existing.status, decidedBy: existing.decidedBy },
    });
  }
}
