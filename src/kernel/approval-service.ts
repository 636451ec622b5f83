import type { ApprovalRecord, ApprovalStatus, Clock, IdGenerator, JsonValue, Store } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';

/** How long a tool call waits for a human when `[approvals].timeout_seconds` is not set. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60 * 1000;

/** A human's answer to an approval request. */
export interface ApprovalDecision {
  approved: boolean;
  /** Who decided: a key's name, `local`, or `timeout`. */
  by: string;
  reason: string | null;
}

/** A request opened for a tool call: its id (to show), and the decision to wait for. */
export interface OpenApproval {
  id: string;
  expiresAt: number;
  decision: Promise<ApprovalDecision>;
}

/** Kernel events about approvals, for the event bus. */
export type ApprovalEvent =
  | { type: 'approval-request'; at: number; agentId: string; name: string; approvalId: string; tool: string }
  | { type: 'approval-decide'; at: number; agentId: string; name: string; approvalId: string; tool: string; status: ApprovalStatus; by: string };

/**
 * Human approvals (spec/01 `autonomous.approval_required_for`). A request is stored before
 * anyone is asked, so pending approvals survive a restart; a decision is stored before the
 * waiting tool call hears it. Nobody deciding within the timeout denies it (status `expired`).
 * A request whose turn ended (cancelled, or the daemon restarted) stays decidable: the decision
 * is recorded, but the call is not replayed.
 */
export class ApprovalService {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #ids: IdGenerator;
  readonly #timeoutMs: number;
  readonly #publish: (event: ApprovalEvent) => void;
  readonly #waiters = new Map<string, (decision: ApprovalDecision) => void>();

  constructor(options: { store: Store; clock: Clock; ids: IdGenerator; timeoutMs?: number; publish: (event: ApprovalEvent) => void }) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    this.#publish = options.publish;
  }

  /**
   * Stores a pending request and returns it with the decision to await. The decision rejects
   * with the signal's reason when the turn is cancelled first (the request stays pending).
   */
  async open(agent: { id: string; name: string }, tool: string, input: JsonValue, signal: AbortSignal): Promise<OpenApproval> {
    const id = this.#ids.uuid();
    const at = this.#clock.now();
    const expiresAt = at + this.#timeoutMs;
    await this.#store.approvals.create({
      id,
      agentId: agent.id,
      agentName: agent.name,
      tool,
      input,
      status: 'pending',
      requestedAt: at,
      expiresAt,
      decidedAt: null,
      decidedBy: null,
      reason: null,
    });
    this.#publish({ type: 'approval-request', at, agentId: agent.id, name: agent.name, approvalId: id, tool });
    const decision = new Promise<ApprovalDecision>((resolve, reject) => {
      const done = new AbortController();
      const both = AbortSignal.any([signal, done.signal]);
      const finish = (answer: ApprovalDecision): void => {
        this.#waiters.delete(id);
        done.abort();
        resolve(answer);
      };
      this.#waiters.set(id, finish);
      signal.addEventListener(
        'abort',
        () => {
          this.#waiters.delete(id);
          done.abort();
          reject(signal.reason as Error);
        },
        { once: true, signal: done.signal },
      );
      this.#clock.sleep(this.#timeoutMs, { signal: both }).then(
        async () => {
          const reason = `no decision within ${Math.round(this.#timeoutMs / 1000)} s`;
          if (await this.#store.approvals.decide(id, { status: 'expired', at: this.#clock.now(), by: 'timeout', reason })) {
            this.#publish({ type: 'approval-decide', at: this.#clock.now(), agentId: agent.id, name: agent.name, approvalId: id, tool, status: 'expired', by: 'timeout' });
            finish({ approved: false, by: 'timeout', reason });
          }
        },
        () => undefined,
      );
    });
    return { id, expiresAt, decision };
  }

  /**
   * Approves or denies a pending request and tells the waiting tool call, if any.
   * @throws {LoomError} `APPROVAL_NOT_FOUND`, or `APPROVAL_DECIDED` when it was decided already.
   */
  async decide(id: string, decision: ApprovalDecision): Promise<ApprovalRecord> {
    const at = this.#clock.now();
    const status = decision.approved ? 'approved' : 'denied';
    if (!(await this.#store.approvals.decide(id, { status, at, by: decision.by, reason: decision.reason }))) {
      const existing = await this.#store.approvals.get(id);
      if (existing === undefined) throw new LoomError('APPROVAL_NOT_FOUND', 'user', `no approval with id "${id}"`);
      throw new LoomError('APPROVAL_DECIDED', 'user', `approval "${id}" was already decided: ${existing.status}${existing.decidedBy === null ? '' : ` by ${existing.decidedBy}`}`);
    }
    const record = (await this.#store.approvals.get(id)) as ApprovalRecord;
    this.#publish({ type: 'approval-decide', at, agentId: record.agentId, name: record.agentName, approvalId: id, tool: record.tool, status, by: decision.by });
    this.#waiters.get(id)?.(decision);
    return record;
  }

  /** Approval requests, oldest first; pending ones by default. */
  list(status: ApprovalStatus | 'all' = 'pending'): Promise<ApprovalRecord[]> {
    return this.#store.approvals.list(status === 'all' ? { limit: 500 } : { status, limit: 500 });
  }
}
