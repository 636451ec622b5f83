import type { EventQuery, EventRecord, Store, UsageBucket, WorkflowRecord } from '../contracts/index.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { conversationSessionId } from './conversation-session.ts';
import { type SessionSummary, type SessionView, toSessionSummary } from './session-view.ts';
import { summarizeUsage, type UsageRow } from './usage-report.ts';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What the store keeps of agents, as the doors read it: sessions, the audit log, usage, workflows.
 * Read-only: the turns and the lifecycle write them.
 */
export class AgentRecords {
  readonly #store: Store;
  readonly #registry: Pick<AgentRegistry, 'find' | 'resolve'>;

  constructor(store: Store, registry: Pick<AgentRegistry, 'find' | 'resolve'>) {
    this.#store = store;
    this.#registry = registry;
  }

  /**
   * The id an agent's records (usage, audit, forged tools) are kept under: a live agent's, named by
   * id or name, else the reference itself when it is an id (a killed agent's records stay).
   * @throws {AgentNotFoundError} for a name no live agent has.
   */
  recordedAgentId(reference: string): string {
    return this.#registry.find(reference)?.id ?? (UUID_PATTERN.test(reference) ? reference : this.#registry.resolve(reference).id);
  }

  /** See `Kernel.workflow`. */
  workflow(reference: string): Promise<WorkflowRecord | undefined> {
    return this.#store.workflows.get(this.#registry.resolve(reference).id);
  }

  /** See `Kernel.session`. */
  async session(reference: string, options: { conversation?: string } = {}): Promise<SessionView> {
    const entry = this.#registry.resolve(reference);
    const id = options.conversation === undefined ? entry.sessionId : conversationSessionId(entry.id, options.conversation);
    const session = await this.#store.sessions.get(id);
    return { id, conversation: options.conversation ?? null, messages: session?.messages ?? [] };
  }

  /** See `Kernel.sessions`. */
  async sessions(reference: string): Promise<SessionSummary[]> {
    const entry = this.#registry.resolve(reference);
    return (await this.#store.sessions.listByAgent(entry.id)).map(toSessionSummary);
  }

  /** See `Kernel.findSession`. */
  async findSession(reference: string, id: string): Promise<SessionSummary | undefined> {
    const entry = this.#registry.resolve(reference);
    const session = await this.#store.sessions.get(id);
    return session === undefined || session.agentId !== entry.id ? undefined : toSessionSummary(session);
  }

  /** See `Kernel.audit`. */
  async audit(options: { agent?: string } & Omit<EventQuery, 'agentId'> = {}): Promise<EventRecord[]> {
    const { agent, ...query } = options;
    const agentId = agent === undefined ? undefined : this.recordedAgentId(agent);
    return this.#store.events.list({ ...query, ...(agentId === undefined ? {} : { agentId }), limit: options.limit ?? 500 });
  }

  /** See `Kernel.usageSeries`. */
  async usageSeries(options: { since: number; until: number; stepMs: number; agent?: string }): Promise<(UsageBucket & { agentName: string | null })[]> {
    const { agent, ...range } = options;
    const agentId = agent === undefined ? undefined : this.recordedAgentId(agent);
    const buckets = await this.#store.usage.series({ ...range, ...(agentId === undefined ? {} : { agentId }) });
    return buckets.map((bucket) => ({ ...bucket, agentName: this.#registry.find(bucket.agentId)?.name ?? null }));
  }

  /** See `Kernel.usage`. */
  async usage(options: { agent?: string; since?: number } = {}): Promise<UsageRow[]> {
    const agentId = options.agent === undefined ? undefined : this.recordedAgentId(options.agent);
    const records = await this.#store.usage.list({
      ...(agentId === undefined ? {} : { agentId }),
      ...(options.since === undefined ? {} : { since: options.since }),
    });
    return summarizeUsage(records, (id) => this.#registry.find(id)?.name);
  }
}
