import type { ModelMessage } from 'ai';
import { tokenCapOf } from '../capabilities/index.ts';
import type { Capability, ToolAgent, UsageRecord } from '../contracts/index.ts';
import { modelName, type ModelTarget } from '../models/index.ts';
import { LOG_TOOLS } from '../tools/index.ts';
import { type ModelCallUsage, partialOutcomeOf, runAgentLoop, SUMMARY_PREFIX, type TurnResult, withStabilityGuidelines } from '../runtime/index.ts';
import { agentSystemPrompt } from './agent-skills.ts';
import { CANONICAL_KEEP_MESSAGES, CANONICAL_MAX_MESSAGES, canonicalConversation, canonicalExchange, renderCanonical } from './canonical-memory.ts';
import { conversationSessionId } from './conversation-session.ts';
import type { FlowState } from './flow-state.ts';
import { compactHistory, summarize } from './history-compaction.ts';
import { contextWindowOf } from './model-choice.ts';
import type { OpenTurn, SessionTurnContext } from './open-turn.ts';
import { UnloggedSpend } from './shared-totals.ts';
import { chainOf, toolPolicyOf } from './tool-policy.ts';
import { endingOf, finishTurn, resultOf } from './turn-commit.ts';
import { resumeOf, TurnJournalWriter } from './turn-journal.ts';
import { TurnTrace } from './turn-record.ts';
import { untrustedSenderOf } from './untrusted-sender.ts';

/** What an event-log agent's turns are limited to. */
const LOG_TOOL_LIMIT: readonly Capability[] = LOG_TOOLS.map((tool) => ({ kind: 'tool_invoke', pattern: tool.name }));

/**
 * A turn of the assistant loop on the agent's session: the history (compacted past its threshold,
 * what the agent knows of the person), the tools its policy gives, the models it may call, the
 * loop journaled step by step (resumed from its journal after a restart), and one commit of what
 * it said and did, whether it finished, failed or was cancelled.
 */
export async function runChatTurn(flow: FlowState, context: SessionTurnContext): Promise<TurnResult> {
  const { store, clock, histories, capabilities, commits } = flow;
  const { runtime, entry, message, caller, signal, place } = context;
  const trace = new TurnTrace(clock);
  const emit = trace.sink(context.emit);
  // The turn may have waited in the queue: the agent must still be live, running and within quota.
  const { journal } = place;
  const runLogger = await commits.begin(entry, emit, 'send it messages', journal?.turnId);

  const base = await histories.load(place.sessionId);
  const conversation = place.conversation ?? 'main';
  const canonical =
    place.person === undefined
      ? undefined
      : {
          person: place.person,
          conversation: canonicalConversation(place.person),
          sessionId: conversationSessionId(entry.id, canonicalConversation(place.person)),
        };
  const canonicalBase = canonical === undefined ? undefined : await histories.load(canonical.sessionId);
  const known = canonical === undefined || canonicalBase === undefined ? undefined : renderCanonical(canonicalBase.messages, canonical.person, conversation);
  const workspace = runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
  const policy = toolPolicyOf(entry, workspace, chainOf(caller));
  const { filter, approvalRequiredFor, settings } = policy;
  // An event-log agent uses its log tools and nothing else, whatever else it holds (spec/03).
  const agent: ToolAgent = entry.manifest.module === 'builtin:eventlog' ? { ...policy.agent, limit: LOG_TOOL_LIMIT } : policy.agent;
  const sender = flow.taint === undefined ? undefined : untrustedSenderOf(caller, place.door, flow.taint.trusted);
  if (sender !== undefined) flow.taint?.label(agent, sender, message);
  const runner = place.cycle === true ? flow.cycleRunner(entry) : flow.runner();
  const tools = runner.toolsFor(agent, filter);
  const { models, tier } = flow.models.choose(runtime, entry, { message, historyDepth: base.messages.length, toolCount: tools.length, chosen: place.model });
  const primary = models[0] as ModelTarget;
  if (tier !== undefined) emit({ type: 'phase', phase: 'model-call', detail: `routed to the ${tier} tier: ${modelName(primary)}` });
  const contextWindowTokens = contextWindowOf(runtime, entry, primary);
  const userMessage: ModelMessage = { role: 'user', content: message };
  const calls: ModelCallUsage[] = [];
  const input = [...base.messages, userMessage];
  const knownTokens = { count: base.messages.length, tokens: histories.tokensOf(base) };
  const spend = new UnloggedSpend();
  const resolver = flow.models.resolver(runtime, entry, spend);
  const turn: OpenTurn = { runtime, entry, place, base, userMessage, trace, logger: runLogger, spend };
  let messages: ModelMessage[];
  try {
    messages = await compactHistory(input, { runtime, entry, clock, model: primary, resolver, signal, emit, logger: runLogger, calls, knownTokens });
  } catch (error) {
    // Refused by a budget before the turn said anything: the message is kept, with why.
    for (const used of calls) trace.model(used);
    if (commits.isLive(entry)) await commits.commit(turn, input, calls, endingOf(error, signal), null);
    else await commits.record(runtime, entry, calls, runLogger, spend);
    throw commits.unwound(entry, error, signal);
  }
  for (const used of calls) trace.model(used);
  // A resumed turn goes on from its journal: what it said and did is not done again.
  const resumed = journal?.record === undefined ? undefined : resumeOf(journal.record);
  if (resumed !== undefined) {
    messages = [...messages, ...resumed.added];
    // Its trace goes on too: the model and tool calls from before the restart, in order.
    for (const step of resumed.trace) {
      if (step.kind === 'model') trace.model(step.call);
      else trace.tool(step);
    }
    emit({
      type: 'phase',
      phase: 'resume',
      detail: `resumed after a restart, from step ${journal?.record?.steps.filter((step) => step.kind !== 'stream').length ?? 0} of its journal`,
    });
  }

  const modelConfig = entry.manifest.model;
  // `llm_max_tokens` caps what one model call may write.
  const maxOutputTokens = Math.min(modelConfig?.max_tokens ?? 4096, tokenCapOf(capabilities.granted(entry.id)));
  let outcome;
  try {
    outcome = await runAgentLoop({
      agent,
      // What the agent knows of the person changes from turn to turn: it goes after the cached prefix.
      system: withStabilityGuidelines(await agentSystemPrompt(runtime, entry.manifest, workspace)),
      ...(known === undefined ? {} : { context: known }),
      cache: modelConfig?.cache !== false,
      cacheKey: place.sessionId,
      messages,
      // A compacted history is new: the repair reads it whole.
      wellFormedPrefix: messages === input ? base.wellFormed : 0,
      ...(messages === input ? { knownTokens } : {}),
      ...(journal === undefined ? {} : { journal: new TurnJournalWriter(store, clock, journal, flow.announce) }),
      ...(resumed === undefined ? {} : { resume: resumed.resume }),
      models,
      resolver,
      runner,
      tools: () => runner.toolsFor(agent, filter),
      settings,
      filter,
      approvalRequiredFor,
      maxIterations: entry.manifest.resources.max_iterations,
      maxOutputTokens,
      temperature: modelConfig?.temperature ?? 0.7,
      contextWindowTokens,
      clock,
      logger: runLogger,
      signal,
      emit,
      stream: place.stream,
      onModelCall: (used) => trace.model(used),
    });
  } catch (error) {
    // What the turn did before failing is counted, and its messages kept (the user's message
    // was accepted; tools may have acted; a cancelled reply keeps what it said). A killed agent
    // has nothing left to keep them in, but what it spent is still counted (its ancestors' caps).
    const partial = partialOutcomeOf(error);
    const spent = [...calls, ...(partial?.calls ?? [])];
    if (commits.isLive(entry)) await commits.commit(turn, partial?.messages ?? messages, spent, endingOf(error, signal), null);
    else await commits.record(runtime, entry, spent, runLogger, spend);
    throw commits.unwound(entry, error, signal);
  }
  if (canonical !== undefined && canonicalBase !== undefined) {
    const summaries = calls.length;
    // What the agent learned of this person goes with them to their other conversations; a
    // failure here costs that, not the turn.
    try {
      const added = canonicalExchange(conversation, message, outcome.text);
      let next = [...canonicalBase.messages, ...added];
      if (next.length > CANONICAL_MAX_MESSAGES) {
        const older = next.slice(0, -CANONICAL_KEEP_MESSAGES);
        const summary = await summarize({ resolver, clock, signal, calls }, outcome.model, older);
        next = [{ role: 'user', content: `${SUMMARY_PREFIX}\n${summary}` }, ...next.slice(-CANONICAL_KEEP_MESSAGES)];
      }
      await histories.save({ sessionId: canonical.sessionId, agentId: entry.id, conversation: canonical.conversation }, canonicalBase, next, added);
    } catch (error) {
      runLogger.warn({ err: error, person: canonical.person }, 'could not update what the agent knows of this person across conversations');
    }
    for (const used of calls.slice(summaries)) trace.model(used);
  }
  // A reply to another agent carries the taint of what it quotes to that agent's turn.
  if (caller.kind === 'agent') flow.taint?.replied(agent, outcome.text);
  const answeredBy = modelName(outcome.model);
  const result = (usage: readonly UsageRecord[]): TurnResult => resultOf(usage, outcome.text, outcome.iterations, answeredBy);
  const usage = await commits.commit(turn, outcome.messages, [...calls, ...outcome.calls], { status: 'finished' }, answeredBy, {
    wellFormed: outcome.wellFormed,
    result,
  });
  return finishTurn(result(usage), emit);
}
