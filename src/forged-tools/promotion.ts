import type { ForgedToolRecord, ForgedToolTier, JsonObject } from '../contracts/index.ts';
import { messageOf } from '../errors/index.ts';
import type { EmergentSettings } from '../manifest/index.ts';
import { type EngineState, findTool, type LiveTool, liveOf, provenanceOf, publishEvent, retireLive, save, settingsOf } from './engine-state.ts';
import { forgedToolNameProblem } from './forge-request.ts';
import { type ForgedToolView, type PromotionResult, toForgedToolView } from './forged-tool-view.ts';
import { boundedVerdict, judgeDocument, judgeSystemPrompt } from './judge.ts';
import { describeReach } from './shared-tool-reach.ts';

/** How long the promotion panel's two judges may take. */
const PANEL_TIMEOUT_MS = 120_000;

/** What the panel decided: approved, or why not; the verdicts to store either way. */
interface PanelDecision {
  approved: boolean;
  reason: string | null;
  verdicts: JsonObject[];
}

/** The promotion panel: two independent judges, both approving with enough confidence. */
async function panel(state: EngineState, tool: LiveTool, settings: EmergentSettings): Promise<PanelDecision> {
  const { options } = state;
  const { record } = tool;
  const signal = AbortSignal.timeout(PANEL_TIMEOUT_MS);
  if (!options.judgeAvailable(record.agentId, 'safety'))
    return {
      approved: false,
      reason: 'no judge model for the promotion panel ([emergent].promotion_judge_model, judge_model or [default_model])',
      verdicts: [],
    };
  const history = {
    calls: record.stats.calls,
    successes: record.stats.successes,
    meanLatencyMs: record.stats.calls === 0 ? 0 : record.stats.totalMs / record.stats.calls,
  };
  const document = judgeDocument(
    tool.request,
    tool.request.testCases.map((test) => ({
      input: test.input,
      ...(test.expectedOutput === undefined ? {} : { expectedOutput: test.expectedOutput }),
      passed: true,
    })),
    history,
  );
  const roles = ['safety', 'correctness'] as const;
  const verdicts = (
    await Promise.all(roles.map((role) => options.judge(record.agentId, role, { system: judgeSystemPrompt(role), prompt: document, signal })))
  ).map(boundedVerdict);
  const stored = verdicts.map((verdict, index): JsonObject => ({ role: roles[index] as string, at: options.clock.now(), ...verdict }));
  const threshold = settings.promotion_threshold.confidence;
  const weak = verdicts
    .map((verdict, index) => ({ verdict, role: roles[index] as string }))
    .filter(({ verdict }) => !verdict.approved || verdict.confidence < threshold);
  if (weak.length === 0) return { approved: true, reason: null, verdicts: stored };
  return {
    approved: false,
    reason: weak
      .map(
        ({ verdict, role }) =>
          `the ${role} reviewer ${verdict.approved ? `was only ${verdict.confidence} confident (below ${threshold})` : 'refused'}${verdict.issues.length === 0 ? '' : `: ${verdict.issues.join('; ')}`}`,
      )
      .join('; '),
    verdicts: stored,
  };
}

/** Session → agent tier, by the panel. */
async function promoteToAgent(state: EngineState, tool: LiveTool, by: string): Promise<{ outcome: 'promoted' | 'refused'; reason: string | null }> {
  const { record } = tool;
  const settings = settingsOf(state, record);
  const refused = async (reason: string): Promise<{ outcome: 'refused'; reason: string }> => {
    await publishEvent(state, record, { type: 'tool-promote', outcome: 'refused', reason, provenance: provenanceOf(record, by) });
    return { outcome: 'refused', reason };
  };
  if (settings === undefined || !settings.enabled) return refused(`agent "${record.agentName}" no longer forges tools`);
  if (record.mode === 'sandbox' && !record.sourcePersisted) {
    return refused(
      `its source is not stored ([emergent].persist_sandbox_source = false), and an agent-tier tool must run after a restart; set persist_sandbox_source = true and forge it again`,
    );
  }
  const agentTools = [...state.live.values()].filter(
    (other) => other.record.agentId === record.agentId && other.record.tier === 'agent' && other.record.status === 'active',
  );
  if (agentTools.length >= settings.max_agent_tools)
    return refused(`agent "${record.agentName}" already keeps ${agentTools.length} tools, its [emergent].max_agent_tools`);
  let decision;
  try {
    decision = await panel(state, tool, settings);
  } catch (error) {
    return refused(`the promotion panel could not be reached: ${messageOf(error)}`);
  }
  record.verdicts = [...record.verdicts, ...decision.verdicts];
  if (!decision.approved) {
    await save(state, record);
    return refused(decision.reason ?? 'the panel refused it');
  }
  record.tier = 'agent';
  record.sessionId = null;
  await save(state, record);
  await publishEvent(state, record, {
    type: 'tool-promote',
    outcome: 'agent',
    reason: null,
    provenance: { ...provenanceOf(record, by), verdicts: decision.verdicts },
  });
  return { outcome: 'promoted', reason: null };
}

/** After a successful call: a session tool with enough successful uses goes to the panel (in the background). */
export function maybePromote(state: EngineState, tool: LiveTool): void {
  const { record } = tool;
  const settings = settingsOf(state, record);
  if (record.tier !== 'session' || settings === undefined) return;
  const uses = settings.promotion_threshold.uses;
  if (record.stats.successes < uses || record.stats.successes < tool.promotionTriedAt + uses) return;
  tool.promotionTriedAt = record.stats.successes;
  void promoteToAgent(state, tool, 'auto').catch((error: unknown) => state.logger.error({ err: error, toolId: record.id }, 'automatic promotion failed'));
}

/**
 * The active tools of live agents that have `record`'s name, other than `record`: what sharing
 * it would take the place of. From the store (tools other nodes hold) and from `live`, read last
 * and without waiting, so a caller that changes `live` right after sees no tool registered since.
 */
function holdersOf(state: EngineState, record: ForgedToolRecord, stored: readonly ForgedToolRecord[]): ForgedToolRecord[] {
  const { live, options } = state;
  const holders = new Map<string, ForgedToolRecord>();
  for (const other of [...stored, ...[...live.values()].map((tool) => tool.record)]) {
    if (other.id === record.id || other.name !== record.name || options.agent(other.agentId) === undefined) continue;
    const current = live.get(other.id)?.record ?? other;
    if (current.status === 'active') holders.set(current.id, current);
  }
  return [...holders.values()];
}

/** Why sharing `record` is refused: the tools it would take the place of, and what to do. */
function sharingRefusal(record: ForgedToolRecord, holders: readonly ForgedToolRecord[]): string {
  const named = holders.map((holder) => `agent "${holder.agentName}" has a tool of that name (${holder.id}, ${holder.tier} tier)`).join(', and ');
  return `cannot share "${record.name}": ${named}, which a shared "${record.name}" would take the place of; demote that tool until it is no longer active (\`loom tools demote <id>\`, one tier each time), or forge this one again under another name and share that`;
}

/** Agent → shared tier: a person's approval is asked for; the promotion happens when it is given, if the name is still free. */
async function requestSharing(state: EngineState, record: ForgedToolRecord, by: string): Promise<PromotionResult> {
  const { options, logger } = state;
  const { store } = options;
  const holders = holdersOf(state, record, await store.forgedTools.list({ status: 'active' }));
  if (holders.length > 0) {
    const reason = sharingRefusal(record, holders);
    await publishEvent(state, record, { type: 'tool-promote', outcome: 'refused', reason, provenance: provenanceOf(record, by) });
    return { tool: toForgedToolView(record), outcome: 'refused', reason };
  }
  const request = await options.requestApproval(
    { id: record.agentId, name: record.agentName },
    {
      action: 'promote forged tool to shared',
      tool: record.name,
      toolId: record.id,
      mode: record.mode,
      codeHash: record.codeHash,
      requestedBy: by,
      // What approving would do: every agent whose grants name the tool (a wildcard too) gets it.
      reach: describeReach(record.name, options.toolGrants()),
    },
  );
  await publishEvent(state, record, {
    type: 'tool-promote',
    outcome: 'pending-approval',
    reason: null,
    provenance: { ...provenanceOf(record, by), approvalId: request.id },
  });
  void request.decision
    .then(
      async (decision) => {
        // Checked again: a tool of this name may have been forged while the request waited.
        const holders = decision.approved ? holdersOf(state, record, await store.forgedTools.list({ status: 'active' })) : [];
        const reason = !decision.approved
          ? `not approved by ${decision.by}${decision.reason === null ? '' : `: ${decision.reason}`}`
          : record.status !== 'active' || record.tier !== 'agent'
            ? `it is no longer an active agent-tier tool`
            : holders.length > 0
              ? sharingRefusal(record, holders)
              : undefined;
        if (reason !== undefined) {
          await publishEvent(state, record, {
            type: 'tool-promote',
            outcome: 'refused',
            reason,
            provenance: { ...provenanceOf(record, decision.by), approvalId: request.id },
          });
          return;
        }
        record.tier = 'shared';
        await save(state, record);
        await publishEvent(state, record, {
          type: 'tool-promote',
          outcome: 'shared',
          reason: null,
          provenance: { ...provenanceOf(record, decision.by), approvalId: request.id, requestedBy: by },
        });
      },
      (error: unknown) => logger.warn({ err: error, toolId: record.id }, 'a shared-tier promotion request ended without a decision'),
    )
    .catch((error: unknown) => logger.error({ err: error, toolId: record.id }, 'a shared-tier promotion could not be completed'));
  return { tool: toForgedToolView(record), outcome: 'pending-approval', reason: null, approvalId: request.id };
}

/** Promotes a tool one tier (see `EmergentEngine.promote`). */
export async function promote(state: EngineState, id: string, by: string): Promise<PromotionResult> {
  const record = await findTool(state, id);
  // A name in the MCP servers' namespace (stored before the rule) goes no further.
  const nameProblem = forgedToolNameProblem(record.name);
  if (nameProblem !== undefined) {
    const reason = `cannot promote "${record.name}": ${nameProblem}`;
    await publishEvent(state, record, { type: 'tool-promote', outcome: 'refused', reason, provenance: provenanceOf(record, by) });
    return { tool: toForgedToolView(record), outcome: 'refused', reason };
  }
  const tool = liveOf(state, record);
  if (record.tier === 'session') {
    const result = await promoteToAgent(state, tool, by);
    return { tool: toForgedToolView(record), ...result };
  }
  if (record.tier === 'shared') return { tool: toForgedToolView(record), outcome: 'refused', reason: 'it is already shared, the highest tier' };
  return requestSharing(state, record, by);
}

/** What demoting a tool records: who did it, and why (none given: the default names who). */
export interface Demotion {
  by: string;
  reason: string | null;
}

/** Demotes a tool one tier (see `EmergentEngine.demote`). */
export async function demote(state: EngineState, id: string, demotion: Demotion): Promise<ForgedToolView> {
  const { by, reason } = demotion;
  const record = await findTool(state, id);
  const tool = liveOf(state, record);
  if (record.tier === 'shared') record.tier = 'agent';
  else if (record.tier === 'agent') {
    record.tier = 'session';
    record.sessionId = state.options.agent(record.agentId)?.sessionId ?? null;
  } else {
    retireLive(state, tool);
    record.status = 'demoted';
    record.statusReason = reason ?? `demoted by ${by}`;
  }
  await save(state, record);
  await publishEvent(state, record, {
    type: 'tool-demote',
    outcome: record.status === 'active' ? record.tier : 'demoted',
    reason,
    provenance: provenanceOf(record, by),
  });
  return toForgedToolView(record);
}

/** Retires the agent's tools of these tiers, saying why (its session reset, it was killed). */
export async function retireWhere(state: EngineState, agentId: string, retirement: { tiers: readonly ForgedToolTier[]; reason: string }): Promise<void> {
  const { tiers, reason } = retirement;
  for (const tool of [...state.live.values()]) {
    const { record } = tool;
    if (record.agentId !== agentId || !tiers.includes(record.tier)) continue;
    retireLive(state, tool);
    record.status = 'retired';
    record.statusReason = reason;
    await save(state, record);
    await publishEvent(state, record, { type: 'tool-retire', outcome: 'retired', reason, provenance: provenanceOf(record, 'kernel') });
  }
}
