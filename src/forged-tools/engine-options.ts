import type { Clock, IdGenerator, JsonObject, Logger, Store, ToolAgent } from '../contracts/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import type { ForgedToolEvent } from './forged-tool-events.ts';
import type { JudgeRole, Verdict } from './judge.ts';
import type { ToolGrants } from './shared-tool-reach.ts';

/** An agent as forging sees it: its `[emergent]` settings and its current session. */
export interface ForgingAgent {
  id: string;
  name: string;
  sessionId: string;
  emergent: EmergentSettings | undefined;
}

/**
 * What the engine needs of the kernel, as narrow ports: a registry lookup, a metered model call
 * for its judges, the audit log, the agents' grants and an approvals port. The kernel supplies
 * them (`KernelServices.forging`) before it is built itself, so the engine is built beside it by
 * the composition root and handed to it.
 */
export interface ForgingPorts {
  /** The live agent with this id, undefined once it is gone (or for a principal that is no agent). */
  agent(agentId: string): ForgingAgent | undefined;
  /** Whether a judge model serves the agent in this role: its `[emergent]` judge model, else the default model. */
  judgeAvailable(agentId: string, role: JudgeRole): boolean;
  /**
   * A judge's verdict: a structured model call billed to the agent. `caller` is the agent as the
   * turn that forges sees it: in a turn limited to less (a package step's), the judge's model must
   * be within that limit.
   */
  judge(agentId: string, role: JudgeRole, request: { system: string; prompt: string; signal: AbortSignal; caller?: ToolAgent }): Promise<Verdict>;
  /** Records an event in the audit log and tells subscribers. */
  publish(event: ForgedToolEvent): Promise<void>;
  /** Every live agent's `[capabilities].tools` grants: what a promotion to shared shows its approver the tool would reach. */
  toolGrants(): ToolGrants[];
  /** Opens a request for a person's approval (Loom's approvals); the decision settles later. */
  requestApproval(
    agent: { id: string; name: string },
    input: JsonObject,
  ): Promise<{ id: string; decision: Promise<{ approved: boolean; by: string; reason: string | null }> }>;
}

/** What the engine is built from: the store, clock, ids and logger the kernel has too, and the kernel's ports. */
export interface EmergentEngineOptions extends ForgingPorts {
  /** Forged tools, and the audit log that forge attempts are counted from (`[emergent].max_forge_attempts_per_hour`). */
  store: Pick<Store, 'forgedTools' | 'events'>;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
}
