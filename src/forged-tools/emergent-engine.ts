import type { Tool, ToolAgent, ToolBox } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { EmergentEngineOptions } from './engine-options.ts';
import { type EngineState, findTool, type LiveTool, publishEvent } from './engine-state.ts';
import { ForgeRate } from './forge-rate.ts';
import { FORGE_TOOL_NAME, ForgeRequestSchema } from './forge-request.ts';
import { type ForgedToolView, type ForgeOutcome, type PromotionResult, toForgedToolView } from './forged-tool-view.ts';
import { forge } from './forging.ts';
import { demote, promote, retireWhere } from './promotion.ts';
import { createSandboxPool } from './sandbox.ts';
import { loadStored, syncStored } from './stored-tools.ts';
import { exportDocument, parseExport } from './tool-export.ts';

/** The forged tools of every agent: forging, calls, tiers, export and import (spec/02). */
export interface EmergentEngine {
  /**
   * Loads stored tools; sandbox tools whose source was not kept are retired (it ended with the
   * process that forged them), unless `othersAlive`: then they may be another node's, running
   * there, and are only not offered here. Call once at boot.
   */
  load(options?: { othersAlive?: boolean }): Promise<void>;
  /**
   * Holds a tool as another node stored it (forged, promoted, demoted or retired there): offered
   * here while it is active and its source is stored, dropped otherwise. Writes nothing.
   */
  sync(toolId: string): Promise<void>;
  /** The tools an agent is offered beside the shared ones: `forge_tool`, its own forged tools, shared tools. */
  toolsFor(agent: ToolAgent): readonly Tool<never>[];
  /** Forges a tool for `agent` (build, test, judge, register); refusals are outcomes, not throws. */
  forge(agent: ToolAgent, request: unknown, toolbox: ToolBox, options: { signal: AbortSignal; by: string }): Promise<ForgeOutcome>;
  /** Imports an `agentos.emergent-tool.v1` document: refused when redacted, else forged again (tested and judged). */
  importTool(agent: ToolAgent, text: string, toolbox: ToolBox, options: { signal: AbortSignal; by: string }): Promise<ForgeOutcome>;
  /** The document `loom tools export` writes. @throws {UsageError} for an unknown id. */
  exportTool(id: string): Promise<string>;
  list(filter?: { agentId?: string }): Promise<ForgedToolView[]>;
  /** @throws {UsageError} for an unknown id (or a unique prefix of none). */
  get(id: string): Promise<ForgedToolView>;
  /**
   * Promotes a tool one tier: to `agent` by the two-judge panel, to `shared` only by a person's
   * approval (a request is opened; the promotion happens when it is approved).
   */
  promote(id: string, by: string): Promise<PromotionResult>;
  /** Demotes a tool one tier (a session tool stops being offered). */
  demote(id: string, by: string, reason: string | null): Promise<ForgedToolView>;
  /** The agent's session was reset: its session tools are retired. */
  sessionEnded(agentId: string): Promise<void>;
  /** The agent was killed: its session and agent tools are retired (shared tools stay). */
  agentKilled(agentId: string): Promise<void>;
  /**
   * Releases every sandbox isolate at once, whatever it is doing (a call in a busy loop, a forge's
   * tests): its sandbox process is ended, calls under way fail as cancelled, forges under way are
   * refused. Call when Loom stops.
   */
  close(): void;
}

/**
 * Builds the engine. Its parts work over one explicit {@link EngineState}: forging and its checks
 * (`forging.ts`), the forge rate (`forge-rate.ts`), calls in the sandbox (`forged-calls.ts`),
 * promotion and demotion (`promotion.ts`), the stored tools (`stored-tools.ts`); what stays here is
 * the `forge_tool` meta-tool and what each agent is offered.
 */
export function createEmergentEngine(options: EmergentEngineOptions): EmergentEngine {
  const logger = options.logger.child({ component: 'emergent' });
  const state: EngineState = {
    options,
    logger,
    live: new Map(),
    memorySource: new Map(),
    sandboxPool: createSandboxPool({ logger: logger.child({ component: 'sandbox' }) }),
    programs: new Set(),
    closing: new AbortController(),
  };
  const { live } = state;
  const rate = new ForgeRate({
    store: options.store,
    clock: options.clock,
    agent: (agentId) => options.agent(agentId),
    publish: (subject, what) => publishEvent(state, subject, what),
  });

  const forgeTool: Tool<unknown> = {
    name: FORGE_TOOL_NAME,
    description:
      'Create a new tool when none of yours fits the task. mode "compose" chains tools you already have (inputMapping values may use $input, $input.x, $prev, $prev.x, $steps.<name>, $steps.<name>.x); mode "sandbox" runs your JavaScript, which must define execute(input) and return JSON. Every test case must pass, then a judge reviews the tool; if approved it is yours for this session.',
    inputSchema: ForgeRequestSchema,
    requires: () => [],
    async execute(input, context) {
      if (context.toolbox === undefined) return { text: 'forge_tool cannot run here: it needs the tool runner', isError: true };
      const asked = { agent: context.agent, raw: input, toolbox: context.toolbox, signal: context.signal, by: FORGE_TOOL_NAME, origin: 'forged' as const };
      const outcome = await rate.attempt(asked, () => forge(state, asked));
      if (!outcome.ok) return { text: `forge_tool refused the tool at the ${outcome.stage} stage: ${outcome.reason}`, isError: true };
      const { tool, verdict } = outcome;
      return {
        text: `Created tool "${tool.name}" (${tool.mode}, session tier; judge confidence ${verdict.confidence}). You can call it now.`,
        structured: { id: tool.id, name: tool.name, tier: tool.tier, mode: tool.mode, confidence: verdict.confidence, issues: verdict.issues },
      };
    },
  };

  return {
    load: (loadOptions = {}) => loadStored(state, loadOptions),

    sync: (toolId) => syncStored(state, toolId),

    toolsFor(agent) {
      const forging = options.agent(agent.id);
      const enabled = forging?.emergent?.enabled === true;
      const tools: Tool<never>[] = enabled ? [forgeTool as unknown as Tool<never>] : [];
      const shared: LiveTool[] = [];
      for (const tool of live.values()) {
        const { record } = tool;
        if (record.status !== 'active') continue;
        const own = record.agentId === agent.id;
        if (own && enabled && (record.tier !== 'session' || record.sessionId === forging.sessionId)) tools.push(tool.own);
        else if (record.tier === 'shared') shared.push(tool);
      }
      // In the order that decides which tool of a name an agent gets (sharing refuses a taken name,
      // but stored state may predate that): the agent's own, then the oldest shared one. The tool
      // runner keeps the first of each name.
      shared.sort((a, b) => a.record.createdAt - b.record.createdAt || a.record.id.localeCompare(b.record.id));
      for (const tool of shared) tools.push(tool.record.agentId === agent.id ? tool.own : tool.other);
      return tools;
    },

    forge(agent, request, toolbox, forgeOptions) {
      const asked = { agent, raw: request, toolbox, signal: forgeOptions.signal, by: forgeOptions.by, origin: 'forged' as const };
      return rate.attempt(asked, () => forge(state, asked));
    },

    importTool: (agent, text, toolbox, forgeOptions) =>
      rate.attempt({ agent, raw: undefined, by: forgeOptions.by, origin: 'imported' }, async () => {
        const parsed = parseExport(text);
        if (!parsed.ok) {
          await publishEvent(
            state,
            { agentId: agent.id, agentName: agent.name, name: parsed.name ?? '(unnamed)', id: null },
            { type: 'tool-forge', outcome: 'refused', reason: `import: ${parsed.reason}`, provenance: { by: forgeOptions.by, origin: 'imported' } },
          );
          return { ok: false, stage: 'request', reason: parsed.reason };
        }
        return forge(state, { agent, raw: parsed.request, toolbox, signal: forgeOptions.signal, by: forgeOptions.by, origin: 'imported' });
      }),

    async exportTool(id) {
      return exportDocument(await findTool(state, id));
    },

    async list(filter = {}) {
      return (await options.store.forgedTools.list(filter.agentId === undefined ? {} : { agentId: filter.agentId })).map((record) =>
        toForgedToolView(live.get(record.id)?.record ?? record),
      );
    },

    async get(id) {
      return toForgedToolView(await findTool(state, id));
    },

    promote: (id, by) => promote(state, id, by),

    demote: (id, by, reason) => demote(state, id, { by, reason }),

    sessionEnded: (agentId) => retireWhere(state, agentId, { tiers: ['session'], reason: 'its session was reset' }),

    agentKilled: (agentId) => retireWhere(state, agentId, { tiers: ['session', 'agent'], reason: 'its agent was killed' }),

    close() {
      state.closing.abort(new LoomError('LOOM_STOPPING', 'system', 'Loom is stopping'));
      for (const program of [...state.programs]) program.dispose();
      state.sandboxPool.close();
    },
  };
}
