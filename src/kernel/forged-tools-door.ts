import { type EmergentEngine, type ForgingPorts, type JudgeRole, VerdictSchema } from '../forged-tools/index.ts';
import { LoomError } from '../errors/index.ts';
import type { ModelTarget } from '../models/index.ts';
import type { AgentModelCalls } from './agent-model-calls.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import type { ApprovalService } from './approval-service.ts';
import type { KernelEvent } from './event-bus.ts';
import type { ForgedTools } from './kernel-api.ts';
import type { KernelTools } from './kernel-tools.ts';
import { judgeModelFor } from './model-targets.ts';

/** How long a forge through a door (CLI, HTTP) may take: its tests and its judge. */
export const FORGE_TIMEOUT_MS = 5 * 60 * 1000;

/** What the forged-tools engine's ports are made of: the registry, the runtime's models, the metered model call, approvals, the audit log. */
export interface ForgingPortParts {
  registry: Pick<AgentRegistry, 'find' | 'list'>;
  runtime: AgentRuntime | undefined;
  modelCalls: Pick<AgentModelCalls, 'call'>;
  approvals: Pick<ApprovalService, 'open'>;
  /** Records the event in the audit log, then tells subscribers. */
  publish: (event: KernelEvent) => Promise<void>;
}

/** The ports the forged-tools engine is built on (see `ForgingPorts`): its judges run on the agent's models, metered as its own calls. */
export function forgingPorts(parts: ForgingPortParts): ForgingPorts {
  const { registry, runtime, modelCalls, approvals } = parts;
  /** The model a judge of `role` uses for an agent: its `[emergent]` judge model, else the default model. */
  const judgeModelOf = (agentId: string, role: JudgeRole): ModelTarget | undefined => judgeModelFor(registry.find(agentId)?.manifest.emergent, role, runtime);
  return {
    agent(agentId) {
      const entry = registry.find(agentId);
      return entry === undefined ? undefined : { id: entry.id, name: entry.name, sessionId: entry.sessionId, emergent: entry.manifest.emergent };
    },
    judgeAvailable: (agentId, role) => runtime !== undefined && judgeModelOf(agentId, role) !== undefined,
    async judge(agentId, role, request) {
      const model = judgeModelOf(agentId, role);
      const reply = await modelCalls.call(agentId, {
        step: `judge (${role})`,
        system: request.system,
        prompt: request.prompt,
        schema: VerdictSchema,
        signal: request.signal,
        ...(model === undefined ? {} : { model }),
        ...(request.caller === undefined ? {} : { caller: request.caller }),
      });
      if (reply.output === undefined) throw new LoomError('JUDGE_NO_VERDICT', 'third-party', 'the judge gave no verdict');
      return reply.output;
    },
    publish: (event) => parts.publish(event),
    toolGrants: () => registry.list().map((entry) => ({ name: entry.name, tools: entry.manifest.capabilities.tools })),
    async requestApproval(agent, input) {
      // Decided by a person, or closed by the approval timeout (or a restart).
      const request = await approvals.open(agent, 'forge_tool', input, new AbortController().signal);
      return { id: request.id, decision: request.decision };
    },
  };
}

/**
 * Forged tools as the doors reach them (`Kernel.forgedTools`): every forge and import runs as the
 * agent, through its grants, within {@link FORGE_TIMEOUT_MS} unless the caller's signal says otherwise.
 */
export function forgedToolsDoor(engine: EmergentEngine, tools: Pick<KernelTools, 'agentToolbox'>, recordedAgentId: (reference: string) => string): ForgedTools {
  return {
    async list(options = {}) {
      const agentId = options.agent === undefined ? undefined : recordedAgentId(options.agent);
      return engine.list(agentId === undefined ? {} : { agentId });
    },
    get: (id) => engine.get(id),
    forge(agent, request, by, signal = AbortSignal.timeout(FORGE_TIMEOUT_MS)) {
      const { agent: toolAgent, toolbox } = tools.agentToolbox(agent, signal);
      return engine.forge(toolAgent, request, toolbox, { signal, by });
    },
    import(agent, document, by, signal = AbortSignal.timeout(FORGE_TIMEOUT_MS)) {
      const { agent: toolAgent, toolbox } = tools.agentToolbox(agent, signal);
      return engine.importTool(toolAgent, document, toolbox, { signal, by });
    },
    export: (id) => engine.exportTool(id),
    promote: (id, by) => engine.promote(id, by),
    demote: (id, by, reason) => engine.demote(id, by, reason),
  };
}
