import type { Clock, IdGenerator, KernelHandle, Logger, Tool, ToolAgent, ToolBox, ToolResult } from '../contracts/index.ts';
import type { EmergentEngine } from '../forged-tools/index.ts';
import { createToolRunner, type TaintTracker, type ToolAuditEntry, type ToolRunner } from '../runtime/index.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import type { ApprovalService } from './approval-service.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { KernelEvent, ToolCallEvent } from './event-bus.ts';
import type { ToolPrincipal } from './kernel-api.ts';
import { workspaceWithoutRuntime } from './manifest-admission.ts';
import { toolPolicyOf } from './tool-policy.ts';

/** The audit log's type of a call the tool runner refused, by why (decision 0072: `<noun>-<verb>`, the verb bare). */
const REFUSAL_TYPES = { denied: 'tool-deny', invalid: 'tool-reject', blocked: 'tool-block', timeout: 'tool-time-out' } as const satisfies Record<
  ToolAuditEntry['outcome'],
  ToolCallEvent['type']
>;

/** Ids of principals that are not agents start with this (an agent's id is a UUID). */
const PRINCIPAL_ID_PREFIX = 'principal:';

const NO_FILTER = { allowlist: [], blocklist: [] } as const;

/** What {@link KernelTools} is built from. */
export interface KernelToolsParts {
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: Pick<AgentRegistry, 'resolve'>;
  capabilities: Pick<CapabilityManager, 'granted'>;
  approvals: ApprovalService;
  taint: TaintTracker;
  runtime: AgentRuntime | undefined;
  /**
   * The handle tools act through. Read when the runner is first used: the handle reaches the
   * kernel's spawn and turns, which run tools through this runner.
   */
  handle: () => KernelHandle;
  /** An agent's forged tools (and `forge_tool`), beside the shared ones. */
  forged: Pick<EmergentEngine, 'toolsFor'>;
  /** Records the event in the audit log, then tells subscribers. */
  publish: (event: KernelEvent) => Promise<void>;
}

/**
 * The kernel's tool runner, the single gate every tool call passes, and the doors that call tools
 * outside a turn: as a principal that is not an agent (MCP clients as `[mcp_server]`), or as an
 * agent (how a person tries a forged tool).
 */
export class KernelTools {
  readonly #parts: KernelToolsParts;
  #runner: ToolRunner | undefined;

  constructor(parts: KernelToolsParts) {
    this.#parts = parts;
  }

  /** The tool runner, built on first use (it acts through the kernel handle, which needs the kernel). */
  runner(): ToolRunner {
    this.#runner ??= this.#createRunner();
    return this.#runner;
  }

  /** The tools `principal` may call: those its capabilities grant. */
  principalTools(principal: ToolPrincipal): Tool<never>[] {
    return this.runner().toolsFor(this.#principalAgent(principal), NO_FILTER);
  }

  /** Runs one tool call for `principal` through the tool runner (every check applies). */
  async runPrincipalTool(principal: ToolPrincipal, toolName: string, input: unknown, signal: AbortSignal): Promise<ToolResult> {
    const outcome = await this.runner().run(
      { toolCallId: this.#parts.ids.uuid(), toolName, input },
      { agent: this.#principalAgent(principal), filter: NO_FILTER, settings: {}, signal },
    );
    return outcome.result;
  }

  /**
   * A door acting as an agent: its tools through the runner, exactly as its own calls.
   * @throws {AgentNotFoundError}
   */
  agentToolbox(reference: string, signal: AbortSignal): { agent: ToolAgent; toolbox: ToolBox } {
    const entry = this.#parts.registry.resolve(reference);
    const runtime = this.#parts.runtime;
    const workspace =
      runtime === undefined
        ? workspaceWithoutRuntime({ name: entry.name, workspace: entry.manifest.workspace })
        : runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
    const policy = toolPolicyOf(entry, workspace, []);
    const toolbox = this.runner().toolbox(
      { agent: policy.agent, filter: policy.filter, settings: policy.settings, signal, approvalRequiredFor: policy.approvalRequiredFor },
      this.#parts.ids.uuid(),
      'a forged tool',
    );
    return { agent: policy.agent, toolbox };
  }

  #principalAgent(principal: ToolPrincipal): ToolAgent {
    const workspace = this.#parts.runtime?.workspaceOf({ name: principal.name, workspace: undefined }) ?? principal.name;
    return {
      id: `${PRINCIPAL_ID_PREFIX}${principal.name}`,
      name: principal.name,
      workspace,
      capabilities: principal.capabilities,
      execPolicy: { allow_shell: true, allow_network: true, allow_file_write: true },
      depth: 0,
      chain: [],
    };
  }

  #createRunner(): ToolRunner {
    const { clock, logger, runtime, capabilities, approvals, taint, publish } = this.#parts;
    return createToolRunner({
      tools: runtime?.tools ?? [],
      kernel: this.#parts.handle(),
      clock,
      logger,
      env: runtime?.env ?? {},
      logs: runtime?.logs,
      // A principal's grants come with it; an agent's are read live (revoked when it is killed).
      grants: (agent) => (agent.id.startsWith(PRINCIPAL_ID_PREFIX) ? agent.capabilities : capabilities.granted(agent.id)),
      approvals,
      agentTools: (agent) => this.#parts.forged.toolsFor(agent),
      taint,
      tainted: async ({ agentId, agentName: name, tool, sink, action, source, excerpt }) => {
        await publish({
          type: 'tool-taint',
          at: clock.now(),
          agentId,
          name,
          tool,
          sink,
          action,
          source: { tool: source.tool, origin: source.origin },
          excerpt,
        });
      },
      // Refusals and calls that ran go to the audit log and the live event stream alike.
      audit: async (entry) => {
        const at = clock.now();
        const { agentId, agentName: name, tool, reason } = entry;
        await publish({ type: REFUSAL_TYPES[entry.outcome], at, agentId, name, agentName: name, tool, outcome: entry.outcome, reason });
      },
      finished: async (entry) => {
        const { agentId, agentName: name, tool, durationMs } = entry;
        await publish({ type: entry.isError ? 'tool-fail' : 'tool-finish', at: clock.now(), agentId, name, tool, durationMs });
      },
    });
  }
}
